import { Injectable } from '@nestjs/common';
import { threadId } from 'node:worker_threads';

/** The worker task's injected provider; `thread` shows that it ran in a pool thread. */
@Injectable()
export class PdfRenderer {
  render(id: string, signal: AbortSignal) {
    signal.throwIfAborted();
    return { pdf: `report-${id}.pdf`, thread: threadId };
  }
}
