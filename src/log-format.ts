/** `LOG_FORMAT`: what the setting allows, and what a process writes. */
export type LogFormatSetting = 'auto' | 'json' | 'pretty';
export type LogFormat = 'json' | 'pretty';

/**
 * JSON lines wherever a program reads the logs (a container runtime, a pipe, a file, a collector);
 * readable lines only for a person at a terminal. `auto` tells the two apart by whether stdout is a TTY.
 */
export function chooseLogFormat(setting: LogFormatSetting, stdoutIsTTY: boolean): LogFormat {
  if (setting !== 'auto') return setting;
  return stdoutIsTTY ? 'pretty' : 'json';
}
