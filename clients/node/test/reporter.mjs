// reporter.mjs - reports node's test runner events the way tests/run.sh
// reads them: "ok NAME", "not ok NAME" followed by the error as "#" lines,
// "skip NAME: REASON", then "RESULT: N passed, N failed, N skipped".  Only
// top-level tests count.
export default async function* reporter(source) {
  let pass = 0;
  let fail = 0;
  let skip = 0;
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const d = event.data;
    if (d.nesting !== 0) continue;
    const name = `node/${d.name}`;
    if (d.skip !== undefined && d.skip !== false) {
      skip += 1;
      yield `skip ${name}: ${d.skip === true ? 'skipped' : d.skip}\n`;
    } else if (event.type === 'test:pass') {
      pass += 1;
      yield `ok ${name}\n`;
    } else {
      fail += 1;
      const err = d.details && d.details.error;
      const cause = err && err.cause ? err.cause : err;
      const text = cause ? String(cause.stack || cause.message || cause) : 'failed';
      yield `not ok ${name}\n${text.split('\n').slice(0, 30).map((l) => `# ${l}\n`).join('')}`;
    }
  }
  yield `RESULT: ${pass} passed, ${fail} failed, ${skip} skipped\n`;
}
