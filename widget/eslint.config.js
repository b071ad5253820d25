// The widget's lint: ESLint's recommended rules and a few that catch real slips, nothing about style
// (Prettier formats). Types are tsc's job (tsconfig.json).
import js from '@eslint/js';
import globals from 'globals';

export default [
  { ignores: ['dist/'] },
  js.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      eqeqeq: ['error', 'smart'], // `== null` for null-or-undefined, === everywhere else
      'no-var': 'error',
      'prefer-const': 'error',
      'no-shadow': 'error',
      // `const { rect, ...rest } = selection` is how a field is left out.
      'no-unused-vars': ['error', { ignoreRestSiblings: true }],
      'no-console': ['error', { allow: ['warn', 'error'] }],
    },
  },
  // `process.env.BOOKWISE_VERSION` is the build's (see build.mjs `define`), not Node's.
  { files: ['src/**/*.js'], languageOptions: { globals: { ...globals.browser, process: 'readonly' } } },
  { files: ['test/**/*.js', 'build.mjs', 'eslint.config.js'], languageOptions: { globals: globals.node } },
  { files: ['build.mjs'], rules: { 'no-console': 'off' } },
];
