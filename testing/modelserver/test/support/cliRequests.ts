// Requests shaped the way each coding-agent CLI of ../shared/HARNESSES.md sends them: its protocol,
// its own tool definitions (trimmed descriptions, real property names and path wording), the context
// it injects, and how it sends a tool result back. All five follow captured real runs
// (claude-code 2.1.197, codex 0.171.0, qwen-code 0.15.10, pi 0.73.1, opencode 1.18.33).

export type Harness = 'claude-code' | 'codex' | 'qwen-code' | 'pi' | 'opencode';
type Json = Record<string, unknown>;

/** A tool call as read back from an answer: `input` is JSON text, or freeform text for custom tools. */
export interface ReadCall {
  id: string;
  name: string;
  input: string;
}

export interface CliFixture {
  harness: Harness;
  protocol: 'anthropic' | 'chat' | 'responses';
  /** Path of the endpoint the CLI posts to. */
  path: string;
  /** Headers the CLI's SDK adds (credentials with dummy values). */
  headers: Record<string, string>;
  /** The name of the CLI's own file-write tool. */
  writeTool: string;
  /** The first request of a turn carrying `prompt`, in a project at `cwd`. */
  first(prompt: string, cwd: string): Json;
  /** The next request, after the CLI ran `call` and got `output`. */
  followUp(first: Json, call: ReadCall, output: string): Json;
}

const str = (description: string) => ({ type: 'string', description });

export const claudeCodeTools = [
  {
    name: 'Bash',
    description: 'Executes a given bash command in a persistent shell session.',
    input_schema: {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { command: str('The command to execute'), timeout: { type: 'number' }, description: str('Clear, concise description'), run_in_background: { type: 'boolean' } },
      required: ['command'],
      additionalProperties: false,
    },
  },
  {
    name: 'Read',
    description: 'Reads a file from the local filesystem.',
    input_schema: { type: 'object', properties: { file_path: str('The absolute path to the file to read'), offset: { type: 'number' }, limit: { type: 'number' } }, required: ['file_path'] },
  },
  {
    name: 'Edit',
    description: 'Performs exact string replacements in files.',
    input_schema: {
      type: 'object',
      properties: { file_path: str('The absolute path to the file to modify'), old_string: str('The text to replace'), new_string: str('The text to replace it with'), replace_all: { type: 'boolean' } },
      required: ['file_path', 'old_string', 'new_string'],
    },
  },
  {
    name: 'Write',
    description: 'Writes a file to the local filesystem.',
    input_schema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { file_path: str('The absolute path to the file to write (must be absolute, not relative)'), content: str('The content to write to the file') },
      required: ['file_path', 'content'],
      additionalProperties: false,
    },
  },
  {
    name: 'TodoWrite',
    description: 'Create and manage a structured task list.',
    input_schema: { type: 'object', properties: { todos: { type: 'array', items: { type: 'object' } } }, required: ['todos'] },
  },
];

// codex 0.171.0 as captured: unified exec (`exec_command`), freeform `apply_patch`, and hosted
// tools (`tool_search`, `web_search`) a client-side model server must skip.
export const codexTools = [
  {
    type: 'function',
    name: 'exec_command',
    description: 'Runs a command in a PTY, returning output or a session ID for ongoing interaction.',
    strict: false,
    parameters: {
      type: 'object',
      properties: { cmd: str('Shell command to execute.'), workdir: str('Optional working directory'), yield_time_ms: { type: 'number' }, justification: { type: 'string' } },
      required: ['cmd'],
      additionalProperties: false,
    },
  },
  {
    type: 'function',
    name: 'write_stdin',
    description: 'Writes characters to an existing unified exec session and returns recent output.',
    strict: false,
    parameters: { type: 'object', properties: { session_id: { type: 'number' }, chars: { type: 'string' } }, required: ['session_id'], additionalProperties: false },
  },
  {
    type: 'custom',
    name: 'apply_patch',
    description: 'The `apply_patch` tool can be used to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.',
    format: {
      type: 'grammar',
      syntax: 'lark',
      definition: 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF\nend_patch: "*** End Patch" LF?\n',
    },
  },
  {
    type: 'function',
    name: 'view_image',
    description: 'View a local image file from the filesystem.',
    strict: false,
    parameters: { type: 'object', properties: { path: str('Local filesystem path to an image file.') }, required: ['path'], additionalProperties: false },
  },
  { type: 'tool_search', execution: 'client', description: '# Tool discovery' },
  { type: 'web_search', external_web_access: false, search_content_types: ['text', 'image'] },
];

export const qwenTools = [
  {
    type: 'function',
    function: { name: 'read_file', description: 'Reads a file.', parameters: { type: 'object', properties: { absolute_path: str('The absolute path to the file to read'), offset: { type: 'number' }, limit: { type: 'number' } }, required: ['absolute_path'] } },
  },
  {
    type: 'function',
    function: {
      name: 'write_file',
      description: 'Writes content to a specified file in the local filesystem.',
      parameters: {
        type: 'object',
        properties: { file_path: str("The absolute path to the file to write to (e.g., '/home/user/project/file.txt'). Relative paths are not supported."), content: str('The content to write to the file.') },
        required: ['file_path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'edit',
      description: 'Replaces text within a file.',
      parameters: { type: 'object', properties: { file_path: str('The absolute path to the file to modify.'), old_string: { type: 'string' }, new_string: { type: 'string' }, replace_all: { type: 'boolean' } }, required: ['file_path', 'old_string', 'new_string'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'run_shell_command',
      description: 'Executes a given shell command as `bash -c <command>`.',
      parameters: { type: 'object', properties: { command: str('Exact bash command to execute'), is_background: { type: 'boolean' }, description: { type: 'string' }, directory: { type: 'string' } }, required: ['command', 'is_background'] },
    },
  },
  { type: 'function', function: { name: 'save_memory', description: 'Saves a fact.', parameters: { type: 'object', properties: { fact: { type: 'string' } }, required: ['fact'] } } },
];

export const piTools = [
  {
    type: 'function',
    function: {
      name: 'read',
      description: 'Read the contents of a file.',
      parameters: { type: 'object', required: ['path'], properties: { path: str('Path to the file to read (relative or absolute)'), offset: { type: 'number' }, limit: { type: 'number' } } },
      strict: false,
    },
  },
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'Execute a bash command in the current working directory.',
      parameters: { type: 'object', required: ['command'], properties: { command: str('Bash command to execute'), timeout: { type: 'number' } } },
      strict: false,
    },
  },
  {
    type: 'function',
    function: {
      name: 'edit',
      description: 'Edit a single file using exact text replacement.',
      parameters: {
        type: 'object',
        required: ['path', 'edits'],
        properties: { path: str('Path to the file to edit (relative or absolute)'), edits: { type: 'array', items: { type: 'object', properties: { oldText: { type: 'string' }, newText: { type: 'string' } } } } },
        additionalProperties: false,
      },
      strict: false,
    },
  },
  {
    type: 'function',
    function: {
      name: 'write',
      description: "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
      parameters: { type: 'object', required: ['path', 'content'], properties: { path: str('Path to the file to write (relative or absolute)'), content: str('Content to write to the file') } },
      strict: false,
    },
  },
];

export const opencodeTools = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'Executes a given bash command.',
      parameters: { type: 'object', properties: { command: str('The command to execute'), timeout: { type: 'number' }, workdir: { type: 'string' }, description: { type: 'string' } }, required: ['command', 'description'], additionalProperties: false },
    },
  },
  {
    type: 'function',
    function: {
      name: 'edit',
      description: 'Performs exact string replacements in files.',
      parameters: { type: 'object', properties: { filePath: str('The absolute path to the file to modify'), oldString: { type: 'string' }, newString: { type: 'string' }, replaceAll: { type: 'boolean' } }, required: ['filePath', 'oldString', 'newString'] },
    },
  },
  {
    type: 'function',
    function: { name: 'read', description: 'Reads a file.', parameters: { type: 'object', properties: { filePath: str('The absolute path to the file to read'), offset: { type: 'number' }, limit: { type: 'number' } }, required: ['filePath'] } },
  },
  {
    type: 'function',
    function: {
      name: 'write',
      description: 'Writes a file to the local filesystem.',
      parameters: {
        type: 'object',
        properties: { content: str('The content to write to the file'), filePath: str('The absolute path to the file to write (must be absolute, not relative)') },
        required: ['content', 'filePath'],
        additionalProperties: false,
      },
    },
  },
  { type: 'function', function: { name: 'todowrite', description: 'Manage a todo list.', parameters: { type: 'object', properties: { todos: { type: 'array' } }, required: ['todos'] } } },
];

const openaiHeaders = { authorization: 'Bearer sk-any', 'user-agent': 'OpenAI/JS 6.26.0' };

/** A chat-completions follow-up: the assistant's tool call and the `tool` message with its result. */
function chatFollowUp(first: Json, call: ReadCall, output: string): Json {
  return {
    ...first,
    messages: [
      ...(first.messages as Json[]),
      { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.input } }] },
      { role: 'tool', tool_call_id: call.id, content: output },
    ],
  };
}

export const CLI_FIXTURES: CliFixture[] = [
  {
    harness: 'claude-code',
    protocol: 'anthropic',
    path: '/v1/messages?beta=true',
    headers: { 'x-api-key': 'sk-ant-any', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'claude-code-20250219' },
    writeTool: 'Write',
    // As 2.1.197 sends it: environment in the system blocks, the prompt after a system-reminder
    // block, and a `system` message after the user's.
    first: (prompt, cwd) => ({
      model: 'claude-opus-4-8',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is 2026-11-30.\n</system-reminder>\n\n" },
            { type: 'text', text: prompt, cache_control: { type: 'ephemeral' } },
          ],
        },
        { role: 'system', content: 'Available agent types for the Agent tool:\n- Explore: Read-only search agent.' },
      ],
      system: [
        { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.197.436; cc_entrypoint=sdk-cli;' },
        { type: 'text', text: "You are a Claude agent, built on Anthropic's Claude Agent SDK.", cache_control: { type: 'ephemeral' } },
        { type: 'text', text: `\nYou are an interactive agent.\n\n# Environment\nYou have been invoked in the following environment: \n - Primary working directory: ${cwd}\n - Is a git repository: false\n - Platform: linux` },
      ],
      tools: claudeCodeTools,
      metadata: { user_id: '{"session_id":"11111111-2222-4333-8444-555555555555"}' },
      max_tokens: 64000,
      thinking: { type: 'adaptive' },
      stream: true,
    }),
    followUp: (first, call, output) => ({
      ...first,
      messages: [
        ...(first.messages as Json[]),
        { role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.input) }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: call.id, content: output },
            { type: 'text', text: '<system-reminder>The TodoWrite tool has not been used recently.</system-reminder>' },
          ],
        },
      ],
    }),
  },
  {
    harness: 'codex',
    protocol: 'responses',
    path: '/v1/responses',
    headers: { authorization: 'Bearer sk-any', originator: 'codex_exec', accept: 'text/event-stream', 'user-agent': 'codex_exec/0.171.0' },
    writeTool: 'apply_patch',
    // No `instructions`: codex 0.171 sends its prompt as developer messages.
    first: (prompt, cwd) => ({
      model: 'gpt-5.5',
      stream: true,
      input: [
        { type: 'message', id: 'msg_1', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex, a coding agent based on GPT-5.' }] },
        { type: 'message', id: 'msg_2', role: 'user', content: [{ type: 'input_text', text: `# AGENTS.md instructions for ${cwd}\n\n<INSTRUCTIONS>\nKeep it short.\n</INSTRUCTIONS>` }] },
        {
          type: 'message',
          id: 'msg_3',
          role: 'user',
          content: [{ type: 'input_text', text: `<environment_context>\n  <cwd>${cwd}</cwd>\n  <shell>bash</shell>\n  <current_date>2026-11-30</current_date>\n</environment_context>` }],
        },
        { type: 'message', id: 'msg_4', role: 'user', content: [{ type: 'input_text', text: prompt }] },
      ],
      tools: codexTools,
      tool_choice: 'auto',
      parallel_tool_calls: true,
      reasoning: { effort: 'medium' },
      store: false,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: '01a22a55-d069-7903-88f1-4f1935eae7a5',
      text: { verbosity: 'low' },
    }),
    followUp: (first, call, output) => ({
      ...first,
      input: [
        ...(first.input as Json[]),
        call.name === 'apply_patch' ? { type: 'custom_tool_call', call_id: call.id, name: call.name, input: call.input } : { type: 'function_call', call_id: call.id, name: call.name, arguments: call.input },
        { type: call.name === 'apply_patch' ? 'custom_tool_call_output' : 'function_call_output', id: 'ctco_1', call_id: call.id, output },
      ],
    }),
  },
  {
    harness: 'qwen-code',
    protocol: 'chat',
    path: '/v1/chat/completions',
    headers: openaiHeaders,
    writeTool: 'write_file',
    first: (prompt, cwd) => ({
      model: 'qwen3-coder-plus',
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 'You are Qwen Code, an interactive CLI agent developed by Alibaba Group.' },
        {
          role: 'user',
          content: [
            {
              type: 'text',
              text: `This is the Qwen Code. We are setting up the context for our chat.\nToday's date is Monday, November 30, 2026.\nMy operating system is: linux\nI'm currently working in the directory: ${cwd}\nShowing up to 20 items (files + folders).`,
            },
          ],
        },
        { role: 'assistant', content: 'Got it. Thanks for the context!' },
        { role: 'user', content: [{ type: 'text', text: prompt }] },
      ],
      tools: qwenTools,
      max_tokens: 8000,
    }),
    // qwen-code sends tool results as a list of text parts.
    followUp: (first, call, output) => {
      const next = chatFollowUp(first, call, output) as { messages: Json[] };
      next.messages[next.messages.length - 1].content = [{ type: 'text', text: output }];
      return next;
    },
  },
  {
    harness: 'pi',
    protocol: 'chat',
    path: '/v1/chat/completions',
    headers: openaiHeaders,
    writeTool: 'write',
    first: (prompt, cwd) => ({
      model: 'keelson-scripted',
      messages: [
        { role: 'system', content: `You are an expert coding assistant operating inside pi, a coding agent harness.\nCurrent date: 2026-11-30\nCurrent working directory: ${cwd}` },
        { role: 'user', content: [{ type: 'text', text: prompt }] },
      ],
      stream: true,
      stream_options: { include_usage: true },
      store: false,
      max_completion_tokens: 16384,
      tools: piTools,
    }),
    followUp: chatFollowUp,
  },
  {
    harness: 'opencode',
    protocol: 'chat',
    path: '/v1/chat/completions',
    headers: { authorization: 'Bearer any', 'user-agent': 'ai-sdk/openai-compatible' },
    writeTool: 'write',
    first: (prompt, cwd) => ({
      model: 'keelson-scripted',
      messages: [
        { role: 'system', content: `You are opencode, an interactive CLI tool.\nHere is some useful information about the environment you are running in:\n<env>\n  Working directory: ${cwd}\n  Is directory a git repo: no\n  Platform: linux\n</env>` },
        // opencode wraps the prompt in literal double quotes.
        { role: 'user', content: `"${prompt}"` },
      ],
      tools: opencodeTools,
      tool_choice: 'auto',
      stream: true,
      stream_options: { include_usage: true },
    }),
    followUp: chatFollowUp,
  },
];

/** The fixture of one harness. */
export function fixture(harness: Harness): CliFixture {
  const found = CLI_FIXTURES.find((f) => f.harness === harness);
  if (!found) throw new Error(`no fixture for ${harness}`);
  return found;
}
