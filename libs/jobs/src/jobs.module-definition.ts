import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { JobsModuleOptions } from './options/jobs-module-options.interface.js';

export const {
  ConfigurableModuleClass: JobsConfigurableModule,
  MODULE_OPTIONS_TOKEN: JOBS_MODULE_OPTIONS,
  OPTIONS_TYPE: JOBS_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: JOBS_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<JobsModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: false }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();
