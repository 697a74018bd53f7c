/** Characters that make a path segment a pattern rather than a name. */
const MAGIC = /[*?[{]/;

/** Whether a path segment holds glob syntax. */
export function isMagic(segment: string): boolean {
  return MAGIC.test(segment);
}

function escapeRegExp(c: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(c) ? `\\${c}` : c;
}

/**
 * A glob as an anchored RegExp over `/`-separated relative paths: `**` spans directories (`**​/`
 * also matches none), `*` and `?` stay inside one segment, `[...]` / `[!...]` are classes and
 * `{a,b}` alternatives (nestable). Dotfiles match like any other name.
 */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slash = glob[i + 2] === '/';
        out += slash ? '(?:.*/)?' : '.*';
        i += slash ? 2 : 1;
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close === -1) out += '\\[';
      else {
        let body = glob.slice(i + 1, close);
        const negated = body.startsWith('!') || body.startsWith('^');
        if (negated) body = body.slice(1);
        out += `[${negated ? '^' : ''}${body.replace(/\\/g, '\\\\')}]`;
        i = close;
      }
    } else if (c === '{') {
      depth++;
      out += '(?:';
    } else if (c === '}' && depth > 0) {
      depth--;
      out += ')';
    } else if (c === ',' && depth > 0) out += '|';
    else if (c === '\\' && i + 1 < glob.length) out += escapeRegExp(glob[++i]!);
    else out += escapeRegExp(c);
  }
  out += ')'.repeat(depth);
  return new RegExp(`^${out}$`);
}

/** A pattern split into its literal leading directories and the glob that follows them. */
export function splitGlob(pattern: string): { base: string; rest: string } {
  const segments = pattern.split('/');
  const literal: string[] = [];
  while (segments.length > 1 && !isMagic(segments[0]!)) literal.push(segments.shift()!);
  const base = pattern.startsWith('/') ? `/${literal.slice(1).join('/')}` : literal.join('/');
  return { base, rest: segments.join('/') };
}
