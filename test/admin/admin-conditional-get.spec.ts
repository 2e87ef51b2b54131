import { createHash } from 'node:crypto';
import { UnauthorizedException } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { useAdminApp } from '../support/http-app.js';
import { useTestDatabase } from '../support/test-database.js';

/** Lets operators and viewers in; a stranger is refused (403), a request with no role is 401. */
class RoleGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const role = context.switchToHttp().getRequest().headers['x-role'];
    if (role === undefined) throw new UnauthorizedException('Sign in first.');
    return role === 'operator' || role === 'viewer';
  }
}

const db = useTestDatabase('jobs_admin_conditional_get');
const admin = useAdminApp(db, new RoleGuard());

/** A GET as `role` (`null`: with none), holding `etag`. */
const get = (path: string, role: string | null = 'operator', etag?: string) =>
  admin.api(path, {
    ...(role !== null && { 'x-role': role }),
    ...(etag !== undefined && { 'if-none-match': etag }),
  });

/** The tag of an answer, which the test checks is the SHA-1 of the very bytes it received. */
async function tagged(res: Response): Promise<{ etag: string; text: string }> {
  expect(res.status).toBe(200);
  const text = await res.text();
  const etag = res.headers.get('etag')!;
  expect(etag).toBe(`"${createHash('sha1').update(text).digest('base64url')}"`);
  expect(res.headers.get('cache-control')).toBe('private, no-cache');
  return { etag, text };
}

/** A pending job of a task nobody runs, due in an hour: it stays in the pending list. */
const enqueue = () =>
  admin.server.queue.addJob({
    task: 'nobodyRunsThis',
    waitUntil: new Date(Date.now() + 3600_000),
  });

it("tags every JSON GET the page polls with a strong ETag of its body, and the page's own HTML not", async () => {
  for (const path of [
    'access',
    'stats',
    'jobs?state=pending&limit=50',
    'jobs/count?state=failed',
    'schedules',
    'throughput?minutes=60',
    'queues',
    'instances',
    'flows?limit=10',
    'durations?minutes=60',
    'tasks',
  ]) {
    await tagged(await get(path));
  }
  const page = await fetch(`${admin.server.url}/jobs-admin`, { headers: { 'x-role': 'viewer' } });
  expect(page.status).toBe(200);
  expect(page.headers.get('cache-control')).toBe('no-store');
});

it('answers 304 with no body to a request holding the current ETag, by any of the forms of If-None-Match', async () => {
  await enqueue();
  const { etag } = await tagged(await get('jobs?state=pending&limit=50'));
  for (const held of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const res = await get('jobs?state=pending&limit=50', 'operator', held);
    expect(res.status).toBe(304);
    expect(res.headers.get('etag')).toBe(etag);
    expect(res.headers.get('cache-control')).toBe('private, no-cache');
    expect(await res.text()).toBe('');
  }
  // A tag of something else is no match.
  expect((await get('jobs?state=pending&limit=50', 'operator', '"other"')).status).toBe(200);
});

it('answers 200 with a new ETag once the list has changed, then 304 to the new one', async () => {
  const path = 'jobs?state=pending&limit=50';
  const before = await tagged(await get(path));
  expect((await get(path, 'operator', before.etag)).status).toBe(304);

  const { id } = await enqueue();
  const after = await tagged(await get(path, 'operator', before.etag));
  expect(after.etag).not.toBe(before.etag);
  expect(
    (JSON.parse(after.text) as { jobs: { id: string }[] }).jobs.map((job) => job.id),
  ).toContain(id);
  expect((await get(path, 'operator', after.etag)).status).toBe(304);
});

it('never answers 304 to a request the guard refuses, whatever tag it holds', async () => {
  const { etag } = await tagged(await get('stats'));
  for (const held of [etag, '*']) {
    const stranger = await get('stats', 'stranger', held);
    expect(stranger.status).toBe(403);
    // Express tags every answer it sends, an error's too (weakly, its own way): not with ours.
    expect(stranger.headers.get('etag')).not.toBe(etag);
    expect(((await stranger.json()) as { message: string }).message).toBe('Forbidden resource');

    const anonymous = await get('stats', null, held);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('etag')).not.toBe(etag);
    expect(((await anonymous.json()) as { message: string }).message).toBe('Sign in first.');
  }
});

it('keeps read-only mode as it was: a viewer gets their own answer, and their actions stay refused', async () => {
  const operator = await tagged(await get('access', 'operator'));
  const viewer = await tagged(await get('access', 'viewer'));
  expect(JSON.parse(viewer.text)).toEqual({ readOnly: true });
  expect(viewer.etag).not.toBe(operator.etag);
  // The operator's tag is not the viewer's answer: the viewer is told again that they only look.
  const held = await get('access', 'viewer', operator.etag);
  expect(await held.json()).toEqual({ readOnly: true });
  expect((await get('access', 'viewer', viewer.etag)).status).toBe(304);

  const { id } = await enqueue();
  const refused = await admin.act(`jobs/${id}/cancel`, 'viewer');
  expect(refused.status).toBe(403);
  expect(((await refused.json()) as { message: string }).message).toBe(
    'This dashboard is read-only for you: you may look, not act.',
  );
  expect((await admin.server.queue.getJob(id))?.state).toBe('pending');
});
