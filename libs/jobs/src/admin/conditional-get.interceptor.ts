import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { map } from 'rxjs';
import type { Observable } from 'rxjs';

/**
 * Every answer of the admin API may be stored only by the viewer's own browser (never by a shared
 * cache: it holds payloads and errors) and must be revalidated before each use.
 */
export const ADMIN_CACHE_CONTROL = 'private, no-cache';

/**
 * The strong validator of a JSON answer: a SHA-1 of its text, in base64url, quoted. The same
 * value serialises to the same text (`JSON.stringify` follows the properties' order, which the
 * service's statements fix), so the tag changes exactly when what would be sent changes. SHA-1 is
 * fast and its 160 bits leave no accidental collision; nothing here needs it to resist an attacker,
 * who could only make their own poll answer 304 to their own request.
 */
export function entityTagOf(json: string): string {
  return `"${createHash('sha1').update(json).digest('base64url')}"`;
}

/**
 * Whether `ifNoneMatch` (the request's `If-None-Match`) names `tag`: `*`, or one of its tags by
 * the weak comparison RFC 9110 prescribes for this header (a `W/` prefix is ignored).
 */
export function matchesIfNoneMatch(ifNoneMatch: string | undefined, tag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((listed) => listed.trim().replace(/^W\//, ''))
    .some((listed) => listed === '*' || listed === tag);
}

/**
 * Conditional GETs of the admin API, in one place for every route: a JSON answer carries an `ETag`
 * (`entityTagOf` its body) and `Cache-Control: private, no-cache`, and a request whose
 * `If-None-Match` names that tag gets `304 Not Modified`, with no body, instead. The page's poll
 * sends the tag it holds, so an unchanged table costs neither the bytes nor a redraw.
 *
 * What it does not save is the reading: the route's statements run all the same, since no marker
 * in the database says a table is unchanged (see "Conditional polling" in docs/operations.md).
 *
 * An interceptor runs after the guards, so a request the guard refuses gets its 401 or 403, never a
 * 304. The page (a string, served `no-store`), anything streamed and every `POST` pass through
 * untouched.
 */
@Injectable()
export class ConditionalGetInterceptor implements NestInterceptor {
  constructor(@Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const request = http.getRequest<{ method: string; headers: Record<string, unknown> }>();
    if (request.method !== 'GET' && request.method !== 'HEAD') return next.handle();
    return next.handle().pipe(
      map((body: unknown) => {
        if (!isJson(body)) return body;
        const tag = entityTagOf(JSON.stringify(body));
        const ifNoneMatch = request.headers['if-none-match'];
        if (matchesIfNoneMatch(typeof ifNoneMatch === 'string' ? ifNoneMatch : undefined, tag)) {
          // A web Response is the whole answer to Nest: its status and headers win over the
          // route's 200, on Express and Fastify alike.
          return new Response(null, {
            status: 304,
            headers: { ETag: tag, 'Cache-Control': ADMIN_CACHE_CONTROL },
          });
        }
        const { httpAdapter } = this.adapterHost;
        const response = http.getResponse();
        httpAdapter.setHeader(response, 'ETag', tag);
        httpAdapter.setHeader(response, 'Cache-Control', ADMIN_CACHE_CONTROL);
        return body;
      }),
    );
  }
}

/**
 * Whether the route answered a value Nest sends as JSON: a plain object or an array. The page's
 * HTML (a string) and anything Nest streams (a `StreamableFile`, a web `Response`) are not tagged.
 */
function isJson(body: unknown): body is object {
  if (body === null || typeof body !== 'object') return false;
  const prototype = Object.getPrototypeOf(body) as unknown;
  return Array.isArray(body) || prototype === Object.prototype || prototype === null;
}
