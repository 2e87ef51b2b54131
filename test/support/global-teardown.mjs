export default async function globalTeardown() {
  await globalThis.__jobsTestServer?.stop();
}
