/** Every fuzz family, in the order reports list them. */

import type { Family } from "../types.js";
import { control } from "./control.js";

export const ALL_FAMILIES: readonly Family[] = [control];
