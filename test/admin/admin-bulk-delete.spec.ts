import { json, useAdminApp } from '../support/http-app.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
const { api, act } = useAdminApp(db);

/** Jobs of a task nobody runs that ended, straight into history: `count` of each state given. */
async function ended(task: string, states: readonly string[], count = 1): Promise<void> {
  await db.query(
    `INSERT INTO jobs."jobHistory" (id, task, state, attempt, "maxRetries", "createdAt", "completedAt")
     SELECT gen_random_uuid(), $1, s, 1, 0, now(), now() - interval '1 minute'
     FROM unnest($2::text[]) AS s, generate_series(1, $3)`,
    [task, states, count],
  );
}

const kept = async (task: string) =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs."jobHistory" WHERE task = $1`,
      [task],
    )
  )[0].n;

describe('POST api/jobs/delete', () => {
  it('deletes the ended jobs of the filter, as many as the count of the same search said', async () => {
    await ended('report', ['completed'], 3);
    await ended('report', ['failed'], 2);
    await ended('invoice', ['completed']);
    // What the dashboard's confirmation states.
    expect(await json(api('jobs/count?state=completed&task=report'))).toEqual({
      count: 3,
      capped: false,
    });
    expect(await json(act('jobs/delete?state=completed&task=report'))).toEqual({ deleted: 3 });
    expect(await kept('report')).toBe(2);
    // Without a state: every ended state.
    expect(await json(act('jobs/delete?task=report'))).toEqual({ deleted: 2 });
    expect(await kept('report')).toBe(0);
    expect(await kept('invoice')).toBe(1);
  });

  it('refuses a read-only viewer with a 403 that says why, deleting nothing', async () => {
    await ended('viewed', ['completed'], 2);
    const body = await json(act('jobs/delete?task=viewed', 'viewer'), 403);
    expect(body.message).toBe('This dashboard is read-only for you: you may look, not act.');
    expect(await kept('viewed')).toBe(2);
  });

  it('refuses (403) a request without the X-Jobs-Admin header, deleting nothing', async () => {
    await ended('forged', ['completed'], 2);
    const body = await json(api('jobs/delete?task=forged', { 'x-role': 'operator' }, 'POST'), 403);
    expect(body.message).toMatch(/X-Jobs-Admin: 1/);
    expect(await kept('forged')).toBe(2);
  });

  it.each([
    [
      'state=pending',
      /"state" must be one or more of completed, failed, interrupted, cancelled, skipped/,
    ],
    [
      'state=completed,active',
      /"state" must be one or more of completed, failed, interrupted, cancelled, skipped/,
    ],
    ['id=0193a4f2', /unknown query parameter "id"/],
    ['before=yesterday', /"before" must be an ISO 8601 time/],
  ])('answers 400 to %s, deleting nothing', async (query, message) => {
    await ended('refused', ['completed']);
    const before = await kept('refused');
    expect((await json(act(`jobs/delete?task=refused&${query}`), 400)).message).toMatch(message);
    expect(await kept('refused')).toBe(before);
  });
});
