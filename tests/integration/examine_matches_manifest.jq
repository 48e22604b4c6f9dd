.array as $a | $m[0] as $mm |
([.members[] | {key: (.path | sub(".*/"; "")), value: .}] | from_entries) as $byname |
($a.level == $mm.level) and ($a.raid_disks == $mm.raid_devices) and
($a.layout == $mm.layout_number) and ($a.chunk_bytes == $mm.chunk_bytes) and
($a.array_bytes == $mm.array_bytes) and ($a.metadata == $mm.metadata) and
($a.array_uuid == $mm.array_uuid) and
($a.missing_roles == ($mm.missing_roles // [])) and
($a.verdict == (if ($mm.missing_roles // []) | length > 0 then "degraded" else "complete" end)) and
all($mm.members[] | select(.present); . as $x |
	$byname[$x.image].role == $x.role and
	$byname[$x.image].data_offset_sectors == $x.data_offset_sectors and
	($byname[$x.image].events | tostring) == $x.examine_events)
