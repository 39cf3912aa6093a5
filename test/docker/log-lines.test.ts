import { PassThrough } from 'node:stream';
import Docker from 'dockerode';
import { demuxLines } from '../../src/runtime/docker/docker.runtime';
import { FollowedLines, parseTimestamped } from '../../src/runtime/docker/lines';

/**
 * A container's log as the runtimes read it: the Engine's multiplexed frames cut into lines, and
 * which timestamped lines are new across the follows of one container. No Engine needed: the
 * frames are made here as the Engine makes them (an 8-byte header: stream 1 or 2, then the length).
 */

function frame(stream: 1 | 2, payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

const ns = (iso: string) => parseTimestamped(`${iso} x`)!.ns;

describe('a container’s log lines', () => {
  it('a character split between two frames comes whole; stdout and stderr are cut apart; a last unterminated line is passed on at the end', async () => {
    const stream = new PassThrough();
    const lines: Array<[string, string]> = [];
    const ended = demuxLines(new Docker(), stream, (line, from) => lines.push([from, line]));
    const cafe = Buffer.from('café ☕ ok\n', 'utf8');
    const cut = cafe.indexOf(Buffer.from('é', 'utf8')) + 1; // inside é's two bytes
    const cup = cafe.indexOf(Buffer.from('☕', 'utf8')) + 2; // inside ☕'s three bytes
    stream.write(frame(1, cafe.subarray(0, cut)));
    stream.write(frame(2, 'oops: '));
    stream.write(frame(1, cafe.subarray(cut, cup)));
    stream.write(frame(2, 'ünïcode\r\n'));
    stream.write(frame(1, cafe.subarray(cup)));
    stream.write(frame(1, 'no newline yet'));
    stream.end();
    await ended;
    expect(lines).toEqual([
      ['stderr', 'oops: ünïcode'],
      ['stdout', 'café ☕ ok'],
      ['stdout', 'no newline yet'],
    ]);
  });

  it('within one follow every line is new, a stderr line stamped before a stdout line already passed on included', () => {
    const seen = new FollowedLines();
    expect(seen.follow()).toBe(0); // the container's whole log, the first time
    expect(seen.fresh(ns('2026-11-27T10:00:00.000000200Z'))).toBe(true); // stdout
    // stderr's reader stamped its line first but the Engine wrote it second: not a repeat.
    expect(seen.fresh(ns('2026-11-27T10:00:00.000000100Z'))).toBe(true);
    expect(seen.fresh(ns('2026-11-27T10:00:01.5Z'))).toBe(true);
  });

  it('following again starts at the newest line’s whole second and drops what was passed on; later lines pass', () => {
    const seen = new FollowedLines();
    seen.follow();
    seen.fresh(ns('2026-11-27T10:00:05.100Z'));
    seen.fresh(ns('2026-11-27T10:00:05.300Z'));
    seen.fresh(ns('2026-11-27T10:00:05.200Z'));
    // The container restarted: the Engine gives second 5 again.
    expect(seen.follow()).toBe(Date.parse('2026-11-27T10:00:05Z') / 1000);
    expect(seen.fresh(ns('2026-11-27T10:00:05.100Z'))).toBe(false);
    expect(seen.fresh(ns('2026-11-27T10:00:05.200Z'))).toBe(false);
    expect(seen.fresh(ns('2026-11-27T10:00:05.300Z'))).toBe(false);
    expect(seen.fresh(ns('2026-11-27T10:00:05.300000001Z'))).toBe(true);
    expect(seen.fresh(ns('2026-11-27T10:00:09Z'))).toBe(true);
  });

  it('adopted after lines were stored: the rest of the newest stored millisecond counts as passed on, the next one does not', () => {
    const seen = FollowedLines.after(new Date('2026-11-27T10:00:07.250Z'));
    expect(seen.follow()).toBe(Date.parse('2026-11-27T10:00:07Z') / 1000);
    expect(seen.fresh(ns('2026-11-27T10:00:07.100Z'))).toBe(false);
    expect(seen.fresh(ns('2026-11-27T10:00:07.250999999Z'))).toBe(false);
    expect(seen.fresh(ns('2026-11-27T10:00:07.251Z'))).toBe(true);
    expect(FollowedLines.after(null).follow()).toBe(0);
  });
});
