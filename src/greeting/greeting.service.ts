import { Injectable, Logger } from '@nestjs/common';

/** Stands in for whatever a real task needs injected: a mailer, a repository, an API client. */
@Injectable()
export class GreetingService {
  private readonly logger = new Logger('Greeting');
  readonly sent: string[] = [];

  send(name: string): string {
    const greeting = `Hello, ${name}!`;
    this.sent.push(greeting);
    this.logger.log(greeting);
    return greeting;
  }
}
