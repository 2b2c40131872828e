// The project's one function, which the edit phase changes.
function greet(name) {
  return "hello, " + name;
}

module.exports = { greet };
