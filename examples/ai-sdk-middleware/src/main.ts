// npm start: three turns of a shop assistant on the AI SDK, with ctx added by ctxMiddleware. For
// each turn it prints the prompt the model received, marking what ctx put there.
import { runDemo } from './demo.js';

const { turns } = await runDemo();
for (const [i, turn] of turns.entries()) {
  console.log(`\n── Turn ${i + 1}${i === turns.length - 1 ? ' (streamText)' : ''}: ${turn.question}`);
  console.log('   The model received (last model call of the turn):');
  for (const line of turn.prompt) {
    const text = line.text.replace(/\s+/g, ' ');
    console.log(`     ${line.role.padEnd(9)} ${text.length > 110 ? `${text.slice(0, 107)}...` : text}`);
  }
  const added = Object.entries(turn.ctx.added)
    .filter(([, c]) => c.messages + c.instructions + c.tools > 0)
    .map(
      ([source, c]) =>
        `${source}: ${[c.messages && `${c.messages} message(s)`, c.instructions && `${c.instructions} instruction(s)`, c.tools && `${c.tools} tool(s)`].filter(Boolean).join(', ')}`,
    );
  console.log(`   ctx added: ${added.join('; ') || 'nothing'} (${turn.ctx.modelCalls} model call(s) in this step)`);
  console.log(`   Reply: ${turn.reply}`);
}
