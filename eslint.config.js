// The web console's lint (scripts/check-console, design.console_lint in
// `make test`): ESLint's recommended rules for browser ES modules, and a
// few of the project's own.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["src/web/console/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: globals.browser,
    },
    rules: {
      // What the agent says goes into the page as text only (dom.js h()).
      "no-restricted-properties": ["error",
        { property: "innerHTML", message: "put text in with h() or textContent" },
        { property: "outerHTML", message: "put text in with h() or textContent" },
        { property: "insertAdjacentHTML", message: "put text in with h() or textContent" }],
      "no-restricted-globals": ["error", { name: "eval", message: "the page's policy refuses eval" }],
      "no-var": "error",
      "prefer-const": "error",
      eqeqeq: "error",
      "no-unused-vars": ["error", { args: "after-used" }],
    },
  },
];
