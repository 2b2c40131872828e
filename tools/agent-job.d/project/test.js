// The project's test: its own function, and every dependency package.json names loads.
const assert = require("assert");
const { greet } = require("./index.js");
const pkg = require("./package.json");

assert.strictEqual(greet("job"), "hello, job");
for (const dep of Object.keys(pkg.dependencies || {})) {
  console.log("dependency " + dep + ": " + JSON.stringify(require(dep)));
}
console.log("tests passed");
