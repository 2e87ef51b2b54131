/** Normalises anything thrown into an `Error`, keeping the original as its cause. */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  const message = typeof thrown === 'string' ? thrown : safeString(thrown);
  return new Error(message, { cause: thrown });
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
