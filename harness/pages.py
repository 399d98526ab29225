"""Every page of the app at its defaults, as a visit opens it: its URL path and its heading (the
browser tests check each, the first-render benchmark times each)."""

DEFAULTS = {"": "Chunked Prefill Lab", "side_by_side": "Side by side",
            "worked_example": "Worked example", "roofline": "Roofline",
            "fidelity": "How close is this to a real GPU?", "traffic": "Traffic",
            "budget_tradeoff": "Budget trade-off", "capacity": "Capacity", "memory": "Memory"}
