/**
 * A suite that needs something outside Node (a PgBouncer, PostgreSQL's server binaries): where
 * this machine cannot have it, the suite is skipped, loudly (a newcomer's machine with only Node);
 * where `requiredBy` is set in the environment (CI: `.ci/run`), it always runs, and a missing
 * dependency fails it instead.
 *
 * `unavailable()` says why the dependency cannot be had, or `undefined` when it can; it is not
 * asked when the suite is required.
 */
export function describeWhereAvailable(suite: {
  file: string;
  requiredBy: string;
  unavailable: () => string | undefined;
  howToRun: string;
}): jest.Describe {
  const why = process.env[suite.requiredBy] ? undefined : suite.unavailable();
  if (!why) return describe;
  console.warn(
    `${suite.file} NOT RUN: ${why}. ${suite.howToRun}; .ci/run does (${suite.requiredBy}=1).`,
  );
  return describe.skip;
}
