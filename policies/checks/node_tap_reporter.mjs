// A TAP reporter for `node --test` whose output is the same bytes on every run: Node's own
// TAP reporter writes each test's duration, so two runs of one tree would never record the
// same output. Top-level tests are unindented TAP lines (what Warden's TAP parser reads as
// test ids); subtests are indented beneath them; a failure keeps only its message's first
// line (a stack trace names memory, not the test).
export default async function* tapWithoutTimings(source) {
  yield 'TAP version 13\n';
  for await (const event of source) {
    const data = event.data ?? {};
    const indent = '    '.repeat(data.nesting ?? 0);
    if (event.type === 'test:pass' || event.type === 'test:fail') {
      const directive = data.skip !== undefined && data.skip !== false ? ' # SKIP' : data.todo !== undefined && data.todo !== false ? ' # TODO' : '';
      yield `${indent}${event.type === 'test:pass' ? 'ok' : 'not ok'} ${data.testNumber} - ${data.name}${directive}\n`;
      if (event.type === 'test:fail') {
        const error = data.details?.error;
        const message = String(error?.cause?.message ?? error?.message ?? 'failed').split('\n')[0];
        yield `${indent}  ---\n${indent}  message: ${JSON.stringify(message)}\n${indent}  ...\n`;
      }
    } else if (event.type === 'test:plan') {
      yield `${indent}1..${data.count}\n`;
    }
  }
}
