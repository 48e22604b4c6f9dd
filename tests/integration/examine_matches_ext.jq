# examine --json of a container array (IMSM, DDF) against the oracle's
# manifest: $m[0] the manifest, $v the volume read (its index in volumes[]).
.array as $a | $m[0] as $mm | $mm.volumes[$v | tonumber] as $vol |
([$a.members[] | select(.path != null) | {key: (.path | sub(".*/"; "")), value: .}] | from_entries) as $byname |
($a.level == $vol.level) and ($a.raid_disks == $mm.raid_devices) and
($a.layout == $vol.layout_number) and ($a.chunk_bytes == $vol.chunk_bytes) and
($a.array_bytes == $vol.array_bytes) and ($a.metadata == $mm.metadata) and
($a.array_uuid == $vol.uuid) and ($a.container_uuid == $mm.container_uuid) and
($a.volume_index == $vol.index) and ($a.name == $vol.name) and
($a.missing_roles == ($mm.missing_roles // [])) and
($a.verdict == (if ($mm.missing_roles // []) | length > 0 then "degraded" else "complete" end)) and
all($vol.members[] | select(.present); . as $x |
	$byname[$x.image].role == $x.role and $byname[$x.image].state == "active" and
	$byname[$x.image].data_offset_bytes == $x.data_offset_bytes) and
all($a.members[]; .state != "active" or ((.path | sub(".*/"; "")) as $p |
	any($vol.members[]; .image == $p and .present)))
