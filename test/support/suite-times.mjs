// A Jest reporter: at the end of the run, every test file's wall time, slowest first, so that CI
// logs show which suites make `npm test` slow. Loaded by Jest natively, like global-setup.mjs.
import { relative } from 'node:path';

export default class SuiteTimesReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const suites = results.testResults
      .map((suite) => ({
        file: relative(this.rootDir, suite.testFilePath),
        seconds: Math.max(0, suite.perfStats.end - suite.perfStats.start) / 1000,
        tests: suite.testResults.length,
        failed: suite.numFailingTests > 0 || suite.testExecError !== undefined,
      }))
      .sort((a, b) => b.seconds - a.seconds);
    if (suites.length === 0) return;
    const total = suites.reduce((sum, suite) => sum + suite.seconds, 0);
    const row = (time, tests, status, file) =>
      `${time.padStart(9)}  ${tests.padStart(5)}  ${status.padEnd(4)}  ${file}`;
    const lines = suites.map((suite) =>
      row(
        `${suite.seconds.toFixed(1)} s`,
        String(suite.tests),
        suite.failed ? 'FAIL' : 'pass',
        suite.file,
      ),
    );
    process.stderr.write(
      `\nSuite times, slowest first (${total.toFixed(1)} s in all, ${suites.length} suites):\n` +
        `${[row('time', 'tests', '', 'file'), ...lines].join('\n')}\n`,
    );
  }
}
