import pg from 'pg';

/**
 * Samples a count from the database over and over, on a connection of its own, until stopped: what
 * a test of a cluster-wide limit checks the limit against, as every instance's claims see it.
 */
export interface Sampler {
  /** Stops sampling; resolves with the largest count seen and how many samples were taken. */
  stop(): Promise<{ max: number; samples: number }>;
}

/** Starts sampling `query` (one row, one integer column `n`) every `intervalMs`. */
export async function sampleMax(url: string, query: string, intervalMs = 3): Promise<Sampler> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  let running = true;
  let max = 0;
  let samples = 0;
  let failure: unknown;
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query<{ n: number }>(query);
      max = Math.max(max, Number(rows[0].n));
      samples++;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })().catch((err: unknown) => {
    // Reported by stop(): a test that fails before stopping must not leave an unhandled rejection.
    failure = err;
  });
  return {
    async stop() {
      running = false;
      await loop;
      await client.end();
      if (failure) throw failure;
      return { max, samples };
    },
  };
}
