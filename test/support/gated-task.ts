import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';

export interface GatedPayload {
  /** Fail with this message once the gate opens, instead of completing. */
  fail?: string;
  /** Do not listen to the signal: run on until the gate opens, cancelled or not. */
  ignoreSignal?: boolean;
  /** Return this (the job's result) once the gate opens. */
  result?: unknown;
}

interface Gate {
  readonly opened: Promise<void>;
  open(): void;
}

const gates = new Map<string, Gate>();

function gateOf(id: string): Gate {
  let gate = gates.get(id);
  if (!gate) {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    gates.set(id, (gate = { opened, open }));
  }
  return gate;
}

/** The ids of the jobs whose `gated` task has started, across the apps of the test file. */
export const started = new Set<string>();
/** Why each job's signal was aborted, as its task saw it. */
export const abortReasons = new Map<string, unknown>();
/** The jobs whose task has settled (returned or thrown). */
export const settled = new Set<string>();

/** Lets job `id`'s task go on (from its start, or before it starts). */
export function openGate(id: string): void {
  gateOf(id).open();
}

/**
 * Runs until the test opens its gate, then completes or fails as its payload says. Unless told to
 * ignore it, an aborted signal also opens the gate: the task then ends as it would have.
 */
@JobTask({ name: 'gated', maxRetries: 2 })
@Injectable()
export class GatedTask implements JobTaskHandler<GatedPayload> {
  async run(payload: GatedPayload, ctx: JobContext): Promise<unknown> {
    started.add(ctx.id);
    const gate = gateOf(ctx.id);
    if (!payload?.ignoreSignal) {
      ctx.signal.addEventListener('abort', () => {
        abortReasons.set(ctx.id, ctx.signal.reason);
        gate.open();
      });
    }
    try {
      await gate.opened;
      if (payload?.fail) throw new Error(payload.fail);
      return payload?.result;
    } finally {
      settled.add(ctx.id);
    }
  }
}
