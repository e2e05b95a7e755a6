/**
 * Users' regular expressions, run with a time limit. A pattern such as (a+)+$ backtracks exponentially on a
 * body a hostile target can shape, and JavaScript regexes cannot be interrupted, except by V8's own script
 * timeout: so they run in a vm context with one, and a runaway match is stopped instead of freezing the
 * daemon. About 0.1 ms per call more than a plain test(), paid only by checks with a pattern.
 */
import vm from "node:vm";

const context = vm.createContext({ source: "", text: "" });
vm.runInContext(
  `const compiled = new Map();
   globalThis.matches = (source, text) => {
     let re = compiled.get(source);
     if (!re) {
       if (compiled.size > 10000) compiled.clear();
       re = new RegExp(source);
       compiled.set(source, re);
     }
     return re.test(text);
   };`,
  context,
);
const call = new vm.Script("matches(source, text)");

/** Longest a pattern may run on one text. */
export const patternBudgetMs = 50;

/** Whether `source` matches `text`, or "timeout" when the match ran past the budget and was stopped. */
export function matches(source: string, text: string): boolean | "timeout" {
  context.source = source;
  context.text = text;
  try {
    return call.runInContext(context, { timeout: patternBudgetMs }) as boolean;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") return "timeout";
    throw error;
  } finally {
    context.text = "";
  }
}
