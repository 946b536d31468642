#!/usr/bin/env python3
"""cputime.py OUT N CMD [ARG]... [-- CMD [ARG]...]...

Runs each command N times, the commands taking turns (so that each meets
the same moments of a shared machine), standard output to OUT, and prints
per command the least CPU time (user + system) one run took, in seconds:
the kernel's own count for that process (wait4), to the microsecond, with
nothing else in it (no shell, no loop around it). A command that fails
stops it (exit 1).
"""
import os
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, n = sys.argv[1], int(sys.argv[2])
    cmds, cur = [], []
    for a in sys.argv[3:]:
        if a == "--":
            cmds.append(cur)
            cur = []
        else:
            cur.append(a)
    cmds.append(cur)
    if any(not c for c in cmds):
        sys.exit("cputime.py: an empty command")
    best = [None] * len(cmds)
    for _ in range(n):
        for k, cmd in enumerate(cmds):
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            # posix_spawn: the child runs no Python before exec
            pid = os.posix_spawnp(cmd[0], cmd, os.environ,
                                  file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1)])
            os.close(fd)
            _, status, ru = os.wait4(pid, 0)
            if status != 0:
                sys.exit("cputime.py: %s failed (status %d)" % (cmd[0], status))
            t = ru.ru_utime + ru.ru_stime
            if best[k] is None or t < best[k]:
                best[k] = t
    for t in best:
        print("%.6f" % t)


main()
