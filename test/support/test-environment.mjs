import { TestEnvironment } from 'jest-environment-node';

/**
 * Node's test environment, plus the library's warnings of a failing test. Tests keep their output
 * quiet (`quietLogger` prints errors only, unless JOBS_TEST_LOG is set), but a test that fails once
 * in fifty runs on CI must explain itself from that one run's output: `quietLogger` keeps every
 * warning of the current test in `__jobsWarnings`, and this prints them when the test fails.
 */
export default class JobsTestEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
  }

  handleTestEvent(event) {
    if (event.name === 'test_start') this.global.__jobsWarnings = [];
    if (event.name === 'test_fn_failure' || event.name === 'hook_failure') {
      const warnings = this.global.__jobsWarnings ?? [];
      if (warnings.length === 0) return;
      const name = event.test?.name ?? event.hook?.type ?? '';
      process.stderr.write(
        `\nThe library's warnings during the failing "${name}" (${this.testPath}):\n` +
          warnings.map((line) => `  ${line}`).join('\n') +
          '\n',
      );
    }
  }
}
