import { runDemo } from './demo.js';

await runDemo();
