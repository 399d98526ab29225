"""This process's resident memory, read from /proc (Linux): what a page run adds at its peak."""


def resident_mib(field: str = "VmRSS") -> float:
    """VmRSS (resident now) or VmHWM (resident at the peak) of this process, in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def reset_peak() -> None:
    """Start VmHWM again from the current resident set (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
