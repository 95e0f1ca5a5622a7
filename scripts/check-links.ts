// Checks every relative link of the documentation (README.md, CONTRIBUTING.md, CHANGELOG.md and
// docs/**/*.md, not the generated docs/api/):
//
//   npm run docs:links
//
// A link `[text](path)` or `[text](path#anchor)` must name a file or directory of the repository,
// and an anchor must be a heading of the markdown file it points into, slugged as GitHub does
// (lower case, punctuation dropped, spaces to hyphens, `-1`, `-2`… for repeats). Links with a
// scheme (https:, mailto:) are not fetched. Code blocks and inline code are ignored. Prints
// `file.md:LINE - message` per broken link; exit 1 when any is broken or no file is found.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** A relative link that does not resolve. */
export interface BrokenLink {
  /** The markdown file holding the link, relative to the root. */
  file: string;
  /** 1-based line of the link. */
  line: number;
  /** The link target as written. */
  target: string;
  /** What is wrong: the file is missing, or the anchor is not a heading there. */
  reason: string;
}

/** The anchor GitHub gives a heading's text. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading keeps its text
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

/** Lines outside fenced code blocks, each with its 1-based number. */
function proseLines(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(raw);
    if (fence !== undefined) {
      if (opening && opening[1]![0] === fence[0] && opening[1]!.length >= fence.length) {
        fence = undefined;
      }
      return;
    }
    if (opening) {
      fence = opening[1]!;
      return;
    }
    out.push({ line: i + 1, text: raw });
  });
  return out;
}

/** The anchors of a markdown file's headings. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text: line } of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every broken relative link of the given markdown files (paths relative to `root`). */
export function checkLinks(root: string, files: readonly string[]): BrokenLink[] {
  const broken: BrokenLink[] = [];
  const cache = new Map<string, Set<string>>();
  const anchorsIn = (file: string): Set<string> => {
    let anchors = cache.get(file);
    if (!anchors) cache.set(file, (anchors = anchorsOf(fs.readFileSync(file, 'utf8'))));
    return anchors;
  };
  for (const file of files) {
    const absolute = path.join(root, file);
    for (const { line, text } of proseLines(fs.readFileSync(absolute, 'utf8'))) {
      const prose = text.replace(/`[^`]*`/g, '``'); // links in inline code are not links
      for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = match[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const hash = target.indexOf('#');
        const pathPart = hash === -1 ? target : target.slice(0, hash);
        const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
        const resolved =
          pathPart === '' ? absolute : path.resolve(path.dirname(absolute), pathPart);
        if (!fs.existsSync(resolved)) {
          broken.push({ file, line, target, reason: 'no such file' });
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md')) {
          if (!anchorsIn(resolved).has(anchor)) {
            const where = path.relative(root, resolved);
            broken.push({ file, line, target, reason: `no heading #${anchor} in ${where}` });
          }
        }
      }
    }
  }
  return broken;
}

/** The documentation files the check covers, relative to `root`. */
export function docFiles(root: string): string[] {
  const files = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md'].filter((f) =>
    fs.existsSync(path.join(root, f)),
  );
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (relative !== path.join('docs', 'api')) walk(relative);
      } else if (entry.name.endsWith('.md')) {
        files.push(relative);
      }
    }
  };
  if (fs.existsSync(path.join(root, 'docs'))) walk('docs');
  return files;
}

function main(): void {
  const root = path.resolve(__dirname, '..');
  const files = docFiles(root);
  if (files.length === 0) {
    console.error('docs:links: no markdown files found');
    process.exit(1);
  }
  const broken = checkLinks(root, files);
  for (const b of broken) console.error(`${b.file}:${b.line} - ${b.target}: ${b.reason}`);
  if (broken.length > 0) {
    console.error(`docs:links: ${broken.length} broken link(s) in ${files.length} file(s)`);
    process.exit(1);
  }
  console.log(`docs:links: every relative link of ${files.length} file(s) resolves`);
}

if (require.main === module) main();
