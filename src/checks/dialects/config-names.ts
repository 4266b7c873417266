/**
 * What the dialects' config fragments and config/schema.ts both write: a header name as config
 * takes it (matched lower-case).
 */

import { z } from "zod";

export const headerName = z
  .string()
  .regex(/^[A-Za-z0-9-]+$/, "an HTTP header name (letters, digits and '-')")
  .transform((s) => s.toLowerCase());
