import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { JobsAdminModule } from 'nestjs-pg-jobs';
import type { JobsAdminModuleOptions } from 'nestjs-pg-jobs';
import { launchChromium } from './chromium.js';
import { startHttpJobsApp } from './http-app.js';
import type { HttpJobsApp } from './http-app.js';
import { useTestDatabase } from './test-database.js';
import type { TestDatabase } from './test-database.js';

/** Where the browser specs leave their screenshots. */
export const ARTIFACTS = join(process.cwd(), 'test-artifacts');
/** How long a browser spec waits for the page to show something (it refreshes every few seconds). */
export const UI_TIMEOUT = 20_000;

export interface DashboardPage {
  readonly page: Page;
  /** Script errors and console errors the page met: a passing test expects none. */
  readonly problems: string[];
}

export interface Dashboard {
  readonly db: TestDatabase;
  /** The instance serving the dashboard at `/jobs-admin`, open to every request. */
  readonly server: HttpJobsApp;
  readonly browser: Browser;
  /** A new page on the dashboard, loaded, that collects its problems. */
  openPage(): Promise<DashboardPage>;
}

/**
 * Gives the calling test file a database of its own, an instance serving the admin dashboard on
 * it (with the setup's tasks and options) and a browser, all started before its tests and closed
 * after them.
 */
export function useDashboard(
  setup: Omit<NonNullable<Parameters<typeof startHttpJobsApp>[1]>, 'controllers'> = {},
  databasePrefix?: string,
  adminOptions: Omit<JobsAdminModuleOptions, 'path' | 'guard'> = {},
): Dashboard {
  let server: HttpJobsApp | undefined;
  let browser: Browser | undefined;
  // Before the database's own hooks (Jest runs afterAll hooks in declaration order): the page polls
  // the app, and the app its database, until both are closed.
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  const db = useTestDatabase(databasePrefix);
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    server = await startHttpJobsApp(db.url, {
      ...setup,
      imports: [
        JobsAdminModule.forRoot({
          path: 'jobs-admin',
          guard: { canActivate: () => true },
          ...adminOptions,
        }),
        ...(setup.imports ?? []),
      ],
    });
    browser = await launchChromium();
  }, 60_000);
  return {
    db,
    get server() {
      return server!;
    },
    get browser() {
      return browser!;
    },
    async openPage() {
      const page = await browser!.newPage({ viewport: { width: 1200, height: 1400 } });
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console: ${message.text()}`);
      });
      await page.goto(`${server!.url}/jobs-admin`);
      return { page, problems };
    },
  };
}
