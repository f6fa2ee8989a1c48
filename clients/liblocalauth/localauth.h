/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* liblocalauth-1: Apple's LocalAuthentication for C, over the localauthd
 * D-Bus service (org.example.LocalAuth). docs/CLIENTS.md maps the names. */
#pragma once

#define LOCALAUTH_INSIDE
#include "la-error.h"
#include "la-enums.h"
#include "la-context.h"
#include "la-right.h"
#include "la-private-key.h"
#include "la-environment.h"
#include "la-quick-unlock.h"
#include "la-version.h"
#undef LOCALAUTH_INSIDE
