"""Streamlit glue: controls and their URL keys, the scenario, the words on screen, widgets, cached
runs, the player and the traffic pages' workload. Pages call these; sim and charts never do."""
