/** Every fuzz family, in the order reports list them. */

import type { Family } from "../types.js";
import { certificates } from "./certificates.js";
import { connection } from "./connection.js";
import { control } from "./control.js";
import { headers } from "./headers.js";
import { paths } from "./paths.js";
import { pipelining } from "./pipelining.js";
import { replay } from "./replay.js";
import { slow } from "./slow.js";
import { smuggling } from "./smuggling.js";
import { spoof } from "./spoof.js";

export const ALL_FAMILIES: readonly Family[] = [
  control,
  headers,
  smuggling,
  pipelining,
  slow,
  spoof,
  connection,
  paths,
  certificates,
  replay,
];
