"""What the benchmarks' smoke mode shares: each benchmark's `--smoke` (and `python -m benchmarks
--smoke`) runs every case once at a small size, so that `make test` sees a case break; what it
prints is no measurement, and says so."""


def announce(what: str) -> None:
    print(f"smoke: {what}; these figures are not results", flush=True)


def capped(values: dict, caps: dict) -> dict:
    """`values` with each number that `caps` names lowered to its cap."""
    return {key: min(value, caps[key]) if key in caps else value for key, value in values.items()}
