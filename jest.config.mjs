/** @type {import('jest').Config} */
export default {
  // Node's, printing the library's warnings of a failing test (test/support/test-environment.mjs).
  testEnvironment: '<rootDir>/test/support/test-environment.mjs',
  rootDir: '.',
  roots: ['<rootDir>/libs', '<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^nestjs-pg-jobs$': '<rootDir>/libs/jobs/src/index.ts',
    '^nestjs-pg-jobs/schedule$': '<rootDir>/libs/jobs/src/cron-bridge/index.ts',
    '^nestjs-pg-jobs/testing$': '<rootDir>/libs/jobs/src/testing/index.ts',
    '^nestjs-pg-jobs/health$': '<rootDir>/libs/jobs/src/health/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.spec.json' }],
  },
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
  reporters: ['default', '<rootDir>/test/support/suite-times.mjs'],
  // Above the 60 s a test's child process may run (test/support/compiled-package.ts), so that a
  // hung child fails its test with its own output rather than with this timeout.
  testTimeout: 90_000,
  // Two cores: each test file boots Nest apps and a database of its own.
  maxWorkers: 2,
};
