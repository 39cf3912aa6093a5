import { PassThrough } from 'node:stream';
import { eachLine } from '../../src/http/edge';

/** How HAProxy's log ring reaches the gateway: text in chunks cut anywhere, a line a request. */
describe('eachLine (the router edge reading its log ring)', () => {
  const read = async (chunks: Buffer[], max?: number): Promise<string[]> => {
    const input = new PassThrough();
    const lines: string[] = [];
    eachLine(input, (line) => lines.push(line), max);
    const ended = new Promise((done) => input.on('end', done));
    for (const chunk of chunks) input.write(chunk);
    input.end();
    await ended;
    return lines;
  };

  it('gives each line whole, wherever the chunks cut it, as readline does', async () => {
    const text = Buffer.from('GET /a 200\nGET /b 204\r\n\nGET /ünïcødé 404\nlast without newline');
    const expected = ['GET /a 200', 'GET /b 204', '', 'GET /ünïcødé 404', 'last without newline'];
    // Every cut, one byte apart: inside a line, at its newline, and inside a two-byte character.
    for (let cut = 1; cut < text.length; cut++) {
      expect(await read([text.subarray(0, cut), text.subarray(cut)])).toEqual(expected);
    }
    expect(await read([...text].map((byte) => Buffer.from([byte])))).toEqual(expected);
  });

  it('drops a line longer than the bound instead of keeping it growing; the lines after it come through', async () => {
    const long = 'x'.repeat(100);
    const lines = await read([Buffer.from(`ok 1\n${long}`), Buffer.from(`${long}`), Buffer.from(`${long}\nok 2\n`)], 150);
    expect(lines[0]).toBe('ok 1');
    expect(lines.at(-1)).toBe('ok 2');
    expect(lines.every((line) => line.length <= 150)).toBe(true);
  });
});
