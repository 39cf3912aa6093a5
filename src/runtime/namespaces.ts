/**
 * An egg's own network namespace, seen from its host: where a router on that host may connect to
 * the egg on the namespace's loopback rather than through the port Docker publishes (whose
 * userland proxy costs more CPU a request than the router itself). Linux only, and entering a
 * namespace takes root: anything that cannot be checked here is simply not offered.
 */
import { readFileSync, readlinkSync, statSync } from 'node:fs';

/**
 * The identity of a process's network namespace (the inode of /proc/<pid>/ns/net), or null if
 * the process is gone or not visible from here. Two reads giving the same number are the same
 * namespace: a pid reused by another process meanwhile gives another one.
 */
export function netnsOf(pid: number): number | null {
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  try {
    return statSync(`/proc/${pid}/ns/net`).ino;
  } catch {
    return null;
  }
}

/**
 * Whether the process of this host pid belongs to the container: its cgroup path names the
 * container's id (cgroupfs `/docker/<id>`, systemd `docker-<id>.scope`). False for a pid of another
 * pid namespace (an Engine on another host, or the gateway in a container of its own), a pid
 * reused since, or any process that cannot be read.
 */
export function pidOfContainer(pid: number, containerId: string): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || !/^[0-9a-f]{64}$/.test(containerId)) return false;
  try {
    return readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(containerId);
  } catch {
    return false;
  }
}

/** Where a link (a namespace's name) points, or null if there is none. */
export function linkTarget(link: string): string | null {
  try {
    return readlinkSync(link);
  } catch {
    return null;
  }
}

/** Where HAProxy (and `ip netns`) look a namespace up by name. */
export const NAMED_NETNS_DIR = '/var/run/netns';

/** Can this process enter other processes' network namespaces (and so may a child it starts)? */
export function mayEnterNamespaces(): boolean {
  return process.platform === 'linux' && typeof process.getuid === 'function' && process.getuid() === 0;
}
