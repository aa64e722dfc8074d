"""The CPU seconds the brokers of a scripts/cluster directory have used since they started.

As a program: `broker_cpu.py CLUSTER_DIR [--jit]` prints them with two decimals, or "-" when the
directory names no broker pid (or, with --jit, no JIT compiler thread was found). --jit counts
only the JIT compiler threads ("C1 CompilerThre", "C2 CompilerThre"), whose work says whether
the brokers are still warming up.
"""

import glob
import os
import sys


def broker_pids(cluster_dir):
    """The pids in CLUSTER_DIR/run/broker*.pid (none for an empty cluster_dir)."""
    pids = []
    for path in sorted(glob.glob(os.path.join(cluster_dir, "run", "broker*.pid"))) if cluster_dir else []:
        with open(path) as f:
            pids.append(f.read().strip())
    return pids


def _cpu_ticks(stat_path):
    """utime + stime (fields 14 and 15) of a /proc/.../stat file, in clock ticks."""
    with open(stat_path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def brokers_cpu(pids, jit=False):
    """The seconds of CPU the processes `pids` used, or None when there are none, a process is
    gone, or (jit) none of their threads is a JIT compiler."""
    if not pids:
        return None
    ticks, found = 0, False
    for pid in pids:
        if not jit:
            try:
                ticks += _cpu_ticks(f"/proc/{pid}/stat")
            except OSError:
                return None
            continue
        for task in glob.glob(f"/proc/{pid}/task/*"):
            try:
                with open(f"{task}/comm") as f:
                    if "Compiler" not in f.read():
                        continue
                ticks += _cpu_ticks(f"{task}/stat")
            except OSError:
                continue  # a thread that ended meanwhile
            found = True
    if jit and not found:
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or len(args) > 2 or (len(args) == 2 and args[1] != "--jit"):
        sys.exit("usage: broker_cpu.py CLUSTER_DIR [--jit]")
    seconds = brokers_cpu(broker_pids(args[0]), jit=len(args) == 2)
    print("-" if seconds is None else f"{seconds:.2f}")
