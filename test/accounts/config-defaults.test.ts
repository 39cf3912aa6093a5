import path from 'node:path';
import { loadConfig } from '../../src/config';

/**
 * `npm start` with nothing set: the gateway listens on 4000 and keeps its embedded PostgreSQL
 * (and generated secrets) in ./.hatchery, relative to where it was started.
 */
describe('configuration defaults', () => {
  it('with no environment: PORT 4000, data dir ./.hatchery, embedded PostgreSQL', () => {
    const config = loadConfig({});
    expect(config.port).toBe(4000);
    expect(config.dataDir).toBe(path.resolve('.hatchery'));
    expect(config.dataDir).toBe(path.join(process.cwd(), '.hatchery'));
    expect(config.databaseUrl).toBeNull();
  });

  it('empty PORT and HATCHERY_DATA_DIR count as unset', () => {
    const config = loadConfig({ PORT: '', HATCHERY_DATA_DIR: '' });
    expect(config.port).toBe(4000);
    expect(config.dataDir).toBe(path.resolve('.hatchery'));
  });

  it('PORT and HATCHERY_DATA_DIR override the defaults; a relative data dir is resolved', () => {
    const config = loadConfig({ PORT: '4123', HATCHERY_DATA_DIR: 'var/hatch', DATABASE_URL: 'postgres://u@127.0.0.1:5432/x' });
    expect(config.port).toBe(4123);
    expect(config.dataDir).toBe(path.resolve('var/hatch'));
    expect(config.databaseUrl).toBe('postgres://u@127.0.0.1:5432/x');
  });
});
