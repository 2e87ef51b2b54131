import { Injectable, UnauthorizedException } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';

/**
 * Who may use the jobs dashboard in the example: with `ADMIN_PASSWORD` set, HTTP Basic auth as
 * `admin` (what a browser prompts for, and sends with the page's own API calls); without it, only
 * clients on this machine. A real app would plug its own authentication in here (a session, an
 * OIDC role, ...).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const request = http.getRequest<{
      headers: Record<string, string>;
      socket: { remoteAddress?: string };
    }>();
    const password = process.env.ADMIN_PASSWORD;
    if (!password) return isLoopback(request.socket.remoteAddress);
    const expected = Buffer.from(`Basic ${Buffer.from(`admin:${password}`).toString('base64')}`);
    const given = Buffer.from(request.headers.authorization ?? '');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return true;
    http
      .getResponse<{ setHeader(name: string, value: string): void }>()
      .setHeader('WWW-Authenticate', 'Basic realm="jobs dashboard"');
    throw new UnauthorizedException('Sign in as "admin" with ADMIN_PASSWORD.');
  }
}

function isLoopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
}
