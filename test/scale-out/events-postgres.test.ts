import { describeSharedEvents } from './shared-events';

/** The default: events travel between gateways by PostgreSQL LISTEN/NOTIFY on their database. */
describeSharedEvents('events shared by two gateways over PostgreSQL LISTEN/NOTIFY', {
  env: {},
  async listeners(pair) {
    const [row] = await pair.a.ds.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'hatchery-events' AND query ILIKE 'LISTEN%'`,
    );
    return row.n;
  },
  async cutListeners(pair) {
    await pair.a.ds.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hatchery-events'`);
  },
});
