// serverArguments.js — the command line of fsl-lsp from the settings: `fsl.serverLog` as
// --log=LEVEL, then `fsl.serverArgs` as given (-I DIR, --stdlib=DIR, --target=NAME).
//
// No `vscode` import, so Node's test runner checks it. Settings are JSON a user typed: a
// wrong type is reported with the offending value instead of reaching the server's
// command line as "[object Object]".
'use strict';

const LOG_LEVELS = ['error', 'info', 'verbose'];

/** True when ARGS already choose a log level (fsl-lsp refuses --log twice). */
function hasLogArgument(args) {
  return args.some((arg) => arg === '--log' || arg.startsWith('--log='));
}

/**
 * settings: { serverArgs: string[], serverLog: 'error' | 'info' | 'verbose' }.
 * Returns the argument list; throws an Error naming the setting and the value when one is
 * not what the package.json schema says.
 */
function serverArguments(settings) {
  const extra = settings.serverArgs === undefined || settings.serverArgs === null ? [] : settings.serverArgs;
  if (!Array.isArray(extra))
    throw new Error(`fsl.serverArgs must be a list of strings, not ${JSON.stringify(extra)}`);
  extra.forEach((arg, index) => {
    if (typeof arg !== 'string')
      throw new Error(`fsl.serverArgs[${index}] must be a string, not ${JSON.stringify(arg)}`);
  });

  const level = settings.serverLog || 'error';
  if (!LOG_LEVELS.includes(level))
    throw new Error(`fsl.serverLog is ${JSON.stringify(level)}; it must be one of ${LOG_LEVELS.join(', ')}`);

  // 'error' is the server's default: no flag, so that serverArgs may still choose one.
  const log = level !== 'error' && !hasLogArgument(extra) ? [`--log=${level}`] : [];
  return [...log, ...extra];
}

module.exports = { serverArguments, LOG_LEVELS };
