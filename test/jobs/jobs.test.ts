import { startGateway, TestGateway } from '../support/gateway';

describe('pg-boss jobs', () => {
  let t: TestGateway;
  beforeAll(async () => {
    t = await startGateway({ HATCHERY_JOBS: 'on' });
  });
  afterAll(() => t.stop());

  it('schedules every periodic job once a minute (log retention hourly), once for all instances', async () => {
    const rows = await t.gateway.ds.query(`SELECT name, cron FROM pgboss.schedule ORDER BY name`);
    expect(rows).toEqual([
      { name: 'deployments-reclaim', cron: '* * * * *' },
      { name: 'energy-meter', cron: '* * * * *' },
      { name: 'logs-retention', cron: '7 * * * *' },
      { name: 'previews-expire', cron: '* * * * *' },
      { name: 'previews-reclaim', cron: '* * * * *' },
      { name: 'sources-prune', cron: '* * * * *' },
      { name: 'volumes-erase', cron: '* * * * *' },
      { name: 'volumes-measure', cron: '* * * * *' },
      { name: 'webhooks-deliver', cron: '* * * * *' },
    ]);
  });
});
