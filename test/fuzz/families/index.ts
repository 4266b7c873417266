/** Every fuzz family, in the order reports list them. */

import type { AnyFamily } from "../types.js";
import { cavage12 } from "./cavage12.js";
import { certificates } from "./certificates.js";
import { connection } from "./connection.js";
import { control } from "./control.js";
import { egressBodies } from "./egress-bodies.js";
import { egressConnection } from "./egress-connection.js";
import { egressControl } from "./egress-control.js";
import { egressHeaders } from "./egress-headers.js";
import { egressIdle } from "./egress-idle.js";
import { egressPaths } from "./egress-paths.js";
import { egressPipelining } from "./egress-pipelining.js";
import { egressResponseReq } from "./egress-response-req.js";
import { forged } from "./forged.js";
import { headers } from "./headers.js";
import { idle } from "./idle.js";
import { jades } from "./jades.js";
import { keys } from "./keys.js";
import { overrides } from "./overrides.js";
import { paths } from "./paths.js";
import { pipelining } from "./pipelining.js";
import { replay } from "./replay.js";
import { responses } from "./responses.js";
import { rfc9421 } from "./rfc9421.js";
import { slow } from "./slow.js";
import { smuggling } from "./smuggling.js";
import { spoof } from "./spoof.js";
import { ukOb } from "./ukob.js";

export const ALL_FAMILIES: readonly AnyFamily[] = [
  control,
  headers,
  smuggling,
  pipelining,
  slow,
  spoof,
  overrides,
  connection,
  idle,
  paths,
  certificates,
  replay,
  cavage12,
  rfc9421,
  jades,
  ukOb,
  keys,
  forged,
  responses,
  egressControl,
  egressHeaders,
  egressBodies,
  egressPaths,
  egressPipelining,
  egressConnection,
  egressIdle,
  egressResponseReq,
];
