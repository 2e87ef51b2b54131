// report-worker.module.ts: booted in every pool thread
import { Injectable, Module } from '@nestjs/common';
import { JobContext, JobTask, JobTaskHandler } from 'nestjs-pg-jobs';
import { PdfRenderer } from './pdf-renderer.js';

@JobTask({ name: 'renderPdf', worker: true, timeout: 60 })
@Injectable()
export class RenderPdf implements JobTaskHandler<{ id: string }> {
  constructor(private readonly renderer: PdfRenderer) {}
  run(payload: { id: string }, ctx: JobContext) {
    return this.renderer.render(payload.id, ctx.signal);
  }
}
@Module({ providers: [PdfRenderer, RenderPdf] })
export class ReportWorkerModule {}
