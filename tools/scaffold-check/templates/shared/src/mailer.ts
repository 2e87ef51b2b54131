import { Injectable } from '@nestjs/common';

/** The app's own provider that the in-process task gets injected (a real app sends mail here). */
@Injectable()
export class Mailer {
  async send(to: string, options: { signal: AbortSignal }): Promise<string> {
    options.signal.throwIfAborted();
    return `sent to ${to}`;
  }
}
