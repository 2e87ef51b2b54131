import { installCompiledPackage } from '../support/compiled-package.js';
import type { CompiledApp } from '../support/compiled-package.js';
import { useTestDatabase } from '../support/test-database.js';

const db = useTestDatabase();
let app: CompiledApp;

// The built package in an app that has not installed typeorm (an optional peer): a transactional
// task's ctx.manager is TypeORM's, so the boot must say so, not the task's first job.
beforeAll(async () => {
  app = await installCompiledPackage('compiled');
}, 180_000);
afterAll(() => app?.remove());

it('fails the boot of an app with a transactional task and no typeorm, naming the task and the install', async () => {
  const { stdout, stderr, code } = await app.node('transactional-without-typeorm.mjs', [], {
    DATABASE_URL: db.url,
  });
  // Exited by itself: the failed boot closed what it had opened.
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(stdout)).toEqual({
    peerMissing: true,
    packageName: 'typeorm',
    message: expect.stringMatching(
      /^Task "compiled\.payInvoice" \(@JobTask\(\{ transactional: true \}\) on PayInvoice\) needs the package "typeorm", which is not installed: .*\(npm install typeorm\)/,
    ),
  });
});
