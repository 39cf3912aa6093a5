import { CommandReader } from '../../src/runtime/docker/preview-relays';

/** The Redis relay reads commands one by one so it can rewrite AUTH, HELLO … AUTH and RESET. */
describe('CommandReader: a client’s byte stream as Redis commands', () => {
  const read = (chunks: Buffer[]) => {
    const seen: Array<{ args: string[]; raw: string }> = [];
    const reader = new CommandReader((args, raw) => seen.push({ args: args.map((a) => a.toString()), raw: raw.toString() }));
    const problems = chunks.map((c) => reader.push(c)).filter((p) => p !== null);
    return { seen, problems };
  };
  const resp = (...args: string[]) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

  it('pipelined RESP arrays, whatever the chunks, each with its exact bytes', () => {
    const text = resp('AUTH', 'default', 'pw') + resp('SET', 'k', 'a\r\nb') + resp('GET', 'k');
    const whole = read([Buffer.from(text)]);
    const bytewise = read([...Buffer.from(text)].map((b) => Buffer.from([b])));
    for (const r of [whole, bytewise]) {
      expect(r.problems).toEqual([]);
      expect(r.seen).toEqual([
        { args: ['AUTH', 'default', 'pw'], raw: resp('AUTH', 'default', 'pw') },
        { args: ['SET', 'k', 'a\r\nb'], raw: resp('SET', 'k', 'a\r\nb') },
        { args: ['GET', 'k'], raw: resp('GET', 'k') },
      ]);
    }
  });

  it('inline commands, as typed into telnet', () => {
    expect(read([Buffer.from('auth default pw\r\nPING\n')]).seen.map((c) => c.args)).toEqual([['auth', 'default', 'pw'], ['PING']]);
  });

  it('a malformed array is a protocol problem that ends the connection', () => {
    expect(read([Buffer.from('*x\r\n')]).problems).toEqual(['Protocol error: invalid multibulk length']);
    expect(read([Buffer.from('*1\r\n+GET\r\n')]).problems).toEqual(["Protocol error: expected '$'"]);
    expect(read([Buffer.from('*1\r\n$-5\r\n')]).problems).toEqual(['Protocol error: invalid bulk length']);
  });
});
