// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Layer boundaries of lib/ (the layering; scripts/check-imports.ts adds what a per-file
// rule cannot see: import cycles, and NestJS loaded through other files). The patterns match the
// specifier as written: `../nest/…` from lib/<folder>, `../../nest/…` from a subfolder.
const nestPackages = {
  regex: '^@nestjs/',
  message: 'This folder is framework-free: it must run without NestJS installed.',
};
/** @param {string} folder @param {string[]} names the sibling folders of lib/ it must not use */
const siblings = (folder, names) => ({
  // A sibling folder, or lib/index.ts (the package's barrel, which re-exports every folder).
  regex: `^(\\.\\./)+(${names.join('|')})(/|$)|^(\\.\\./)*\\.\\.(/index)?$`,
  message: `lib/${folder} must not import lib/${names.join(', lib/')} or the package barrel.`,
});
/** @param {string} folder @param {object[]} patterns */
const boundary = (folder, patterns) => ({
  files: [`lib/${folder}/**/*.ts`],
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      '.snippets/**',
      '.snippets-test/**',
      '.snippets-scratch/**',
      'docs/api/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  // lib/core is the bottom layer: it imports nothing else of lib/.
  boundary('core', [
    nestPackages,
    siblings('core', ['stores', 'nest', 'cli', 'metrics', 'client', 'board']),
  ]),
  // lib/stores builds on lib/core only.
  boundary('stores', [
    nestPackages,
    siblings('stores', ['nest', 'cli', 'metrics', 'client', 'board']),
  ]),
  // The metrics and the Retry-After clients build on lib/core only.
  boundary('metrics', [
    nestPackages,
    siblings('metrics', ['stores', 'nest', 'cli', 'client', 'board']),
  ]),
  boundary('client', [
    nestPackages,
    siblings('client', ['stores', 'nest', 'cli', 'metrics', 'board']),
  ]),
  // The framework-free request helpers (client IP, access lists, headers, key hashing, device
  // tokens) build on lib/core only.
  boundary('http', [
    nestPackages,
    siblings('http', ['stores', 'config', 'nest', 'cli', 'metrics', 'client', 'board']),
  ]),
  // The configuration (module options, env table, policy specs, Redis connections) builds on
  // lib/core, lib/stores, lib/metrics and lib/http. The module options name Nest's
  // ExecutionContext in two callbacks: a type import, erased, so NestJS is never loaded (checked by
  // scripts/check-imports.ts).
  {
    files: ['lib/config/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { ...nestPackages, allowTypeImports: true },
            siblings('config', ['nest', 'cli', 'client', 'board']),
          ],
        },
      ],
    },
  },
  // The ops board (pages, actions, its recorder) builds on lib/core, lib/stores and lib/http; the
  // Nest module (lib/nest/board) and the CLI (`redlimit board`) serve it.
  boundary('board', [
    nestPackages,
    siblings('board', ['nest', 'cli', 'metrics', 'client', 'config']),
  ]),
  // The CLI uses lib/core, lib/stores, lib/http, lib/config and lib/board, never the Nest layer.
  boundary('cli', [nestPackages, siblings('cli', ['nest', 'metrics', 'client'])]),
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
