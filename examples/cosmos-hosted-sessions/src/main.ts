import { CtxError } from '@ctx/core';
import { runDemo } from './demo.js';

try {
  await runDemo();
} catch (error) {
  if (!CtxError.isInstance(error)) throw error;
  console.error(`\n${error.name}: ${error.message}`);
  process.exitCode = 1;
}
