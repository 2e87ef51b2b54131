/**
 * Parses Prometheus' text format into `name{a="1",b="2"}` → value, with the labels sorted so a
 * test does not depend on the order a client prints them in.
 */
export function parsePrometheusText(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`Not a Prometheus sample: ${line}`);
    const [, name, labels = '', value] = match;
    const sorted = [...labels.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, key, labelValue]) => `${key}="${labelValue}"`)
      .sort();
    samples.set(sorted.length ? `${name}{${sorted.join(',')}}` : name, Number(value));
  }
  return samples;
}
