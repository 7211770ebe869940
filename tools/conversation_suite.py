"""Generate the conversational evaluation suite (``examples/eval/conversations``), deterministically.

    .venv/bin/python tools/conversation_suite.py [--out DIR]

Writes ``memories.jsonl`` and ``queries.jsonl`` in the format ``powercontext eval run`` reads
(docs/evaluation.md). Each conversation is a multi-session chat between two to four people, stored one turn per
Atomic Memory (kind ``note``, ``created`` = the session's date) in a Scope of its own (``chat:cNN``), the way a
conversational memory would keep it. Questions are about what the people said:

* ``single-hop``: one turn answers it; the question paraphrases the turn (a dog's name asked of "the animal they
  adopted", a job asked as "what work"), so the speaker's name is often the only word both share;
* ``multi-hop``: two turns are needed — a relative introduced by relation and name in one session and a fact
  about that name in a later one, or two facts about one person asked together;
* ``temporal``: "when did …" (the dated turn that says it) and "what … now" after a change of plan (the newer turn
  is expected, the older one is listed as ``outdated``);
* ``abstain``: something nobody in that chat said about that person (``expected`` empty), usually on a topic
  someone else in the chat did talk about.

Every Scope is full of what makes this hard for lexical search: the participants' names in most turns, replies
that echo the fact's words without stating it, and decoy turns sharing its entities (a cousin who also runs
marathons, a city visited once). Everything is drawn from one seeded ``random.Random`` over lists (never a set
or a hash order), so the same seed writes the same bytes on every platform; tests/unit/test_conversation_suite.py
checks that the committed suite is exactly what this script writes.

The generated suite is released under CC0 1.0 (see its README.md); this script is part of PowerContext
(Apache-2.0). All people, places and events are invented.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SEED = 38
CONVERSATIONS = 13
SESSIONS = (8, 11)  # inclusive range of sessions per conversation
FACTS_PER_CONVERSATION = 14
UPDATES_PER_CONVERSATION = 5
WHEN_QUESTIONS = 4
CHAINS_PER_CONVERSATION = 3
PAIRS_PER_CONVERSATION = 1
ABSTAIN_PER_CONVERSATION = 3
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "examples" / "eval" / "conversations"

PEOPLE = (
    "Maya", "Leo", "Priyanka", "Tomasz", "Aisha", "Jonas", "Chen", "Rosa", "Kwame", "Ingrid", "Mateo", "Yuki",
    "Fatima", "Oskar", "Lucía", "Dmitri", "Amara", "Niall", "Sofia", "Hamid", "Elif", "Bruno", "Keiko", "Tariq",
    "Freya", "Rafael", "Zanele", "Emil", "Nadia", "Arjun", "Greta", "Samuel",
)  # fmt: skip
RELATIVES = (
    "Ines", "Tomas", "Bea", "Kofi", "Marta", "Olu", "Henrik", "Lina", "Paolo", "Rukmini", "Sven", "Dalia", "Ezra",
    "Mirela", "Hugo", "Anouk", "Ravi", "Wen", "Teodor", "Ayla", "Callum", "Precious", "Bogdan", "Saoirse",
)  # fmt: skip


@dataclass(frozen=True)
class Topic:
    """One kind of thing a person can tell the chat, with the ways it is said and asked.

    ``say`` are first-person turns; ``ask`` third-person questions naming ``{who}``; ``update`` a later turn that
    changes the value (``{old_*}`` slots hold the earlier one) and ``ask_now`` asks for the current value;
    ``echo`` a reply by someone else that repeats the fact's words without stating it; ``decoy`` a turn by anyone
    that shares its vocabulary and answers nothing about the asker.
    """

    key: str
    values: tuple[dict[str, str], ...]
    say: tuple[str, ...]
    ask: tuple[str, ...]
    when: tuple[str, ...] = ()
    update: tuple[str, ...] = ()
    ask_now: tuple[str, ...] = ()
    echo: tuple[str, ...] = ()
    decoy: tuple[str, ...] = ()


def _v(**slots: str) -> dict[str, str]:
    return slots


TOPICS: tuple[Topic, ...] = (
    Topic(
        "pet",
        (
            _v(animal="greyhound", kind="dog", name="Biscuit"),
            _v(animal="tabby kitten", kind="cat", name="Miso"),
            _v(animal="cockatiel", kind="bird", name="Pepper"),
            _v(animal="beagle puppy", kind="dog", name="Waffles"),
        ),
        (
            "We finally brought a {animal} home from the rescue centre on Saturday; the kids picked the name {name}.",
            "There's a {animal} asleep on my feet as I type this. Meet {name}, adopted last weekend!",
        ),
        ("What name did {who}'s new pet get?", "Which kind of {kind} did {who} adopt?"),
        when=("When did {who} get the new pet?",),
        echo=("{name} is the best name ever, send pictures!", "Aww, a {animal}! Is {name} house-trained yet?"),
        decoy=(
            "My landlord finally said yes to pets, so I'm browsing shelter websites every night.",
            "The {animal} next door howled through the whole storm.",
        ),
    ),
    Topic(
        "job",
        (
            _v(role="data analyst", org="a wind-farm operator"),
            _v(role="pastry chef", org="a hotel in the old town"),
            _v(role="paramedic", org="the regional ambulance service"),
            _v(role="chemistry teacher", org="the secondary school across the river"),
            _v(role="ferry mechanic", org="the island shipping line"),
        ),
        (
            "I signed the contract this morning: I'm starting as a {role} at {org} next month.",
            "So, news: {org} offered me the {role} position and I said yes.",
        ),
        ("What new job did {who} accept?", "What position was {who} offered?"),
        when=("When did {who} take the job offer?",),
        update=("Plot twist on the work front: I backed out of {old_org}. I'll be a {role} at {org} instead.",),
        ask_now=("Which job did {who} end up taking in the end?", "Where does {who} work now, after changing plans?"),
        echo=("A {role}! That suits you so well.",),
        decoy=("My cousin interviewed at {org} once and hated the commute.", "Work has been brutal, three deadlines."),
    ),
    Topic(
        "move",
        (
            _v(city="Lisbon", area="near the tram line"),
            _v(city="Glasgow", area="in the West End"),
            _v(city="Valencia", area="by the old riverbed park"),
            _v(city="Tromsø", area="up on the hill"),
            _v(city="Montreal", area="in the Plateau"),
        ),
        (
            "The boxes are packed: we go to {city} at the end of the month, we found a flat {area}.",
            "We're relocating to {city}! Signed a lease on a place {area}.",
        ),
        ("Which city is {who} moving to?", "Where did {who} find a flat to live?"),
        when=("When did {who} find somewhere to rent?",),
        update=("The {old_city} flat fell through, so we're heading to {city} after all, a place {area}.",),
        ask_now=("Where is {who} living now that the housing plans changed?",),
        echo=("{city} is gorgeous in autumn, you'll love it.",),
        decoy=("I spent a weekend in {city} years ago and got hopelessly lost.",),
    ),
    Topic(
        "instrument",
        (
            _v(instrument="cello", teacher="a retired orchestra player"),
            _v(instrument="ukulele", teacher="a guy from the community centre"),
            _v(instrument="trumpet", teacher="my neighbour's son"),
            _v(instrument="harp", teacher="a teacher two streets away"),
        ),
        (
            "I've started {instrument} lessons on Thursday evenings with {teacher}. My fingers hurt.",
            "Guess who's learning the {instrument}? Weekly lessons with {teacher}; I'm terrible but happy.",
        ),
        ("What musical instrument is {who} learning to play?", "Who teaches {who} music?"),
        when=("When did {who} begin music lessons?",),
        update=("I gave up on the {old_instrument}, honestly. Switched to {instrument} with {teacher} and it clicks.",),
        ask_now=("Which instrument is {who} practising these days?",),
        echo=("A {instrument}? I'd pay to hear that.",),
        decoy=("There's a busker with a {instrument} outside my office every lunchtime.",),
    ),
    Topic(
        "race",
        (
            _v(event="half marathon in Berlin"),
            _v(event="sprint triathlon at the reservoir"),
            _v(event="hundred-kilometre cycling sportive"),
            _v(event="mountain trail ultra"),
        ),
        (
            "I registered for the {event}! The training plan starts on Monday.",
            "Officially entered the {event}, so expect me to be grumpy and hungry until race day.",
        ),
        ("Which competition did {who} sign up for?", "What is {who} training for?"),
        when=("When did {who} enter the race?",),
        update=("I pulled out of the {old_event} because of my knee, but I'm down for the {event} instead.",),
        ask_now=("What event is {who} currently preparing for?",),
        echo=("The {event}? You're braver than me.",),
        decoy=("My brother did the {event} last year and couldn't walk for a week.",),
    ),
    Topic(
        "trip",
        (
            _v(place="Kyoto", detail="two weeks in cherry-blossom season"),
            _v(place="Patagonia", detail="hiking the W trek"),
            _v(place="Iceland", detail="driving the ring road"),
            _v(place="Morocco", detail="a week in the Atlas mountains"),
            _v(place="Sicily", detail="a slow road trip round the coast"),
        ),
        (
            "Booked it: {detail} in {place}. I can't stop looking at the photos.",
            "We just paid the deposit for {place}, {detail}.",
        ),
        ("Where is {who} going on holiday?", "What vacation has {who} booked?"),
        when=("When did {who} book the getaway?",),
        update=("We cancelled {old_place}, the dates didn't work. Going to {place} instead, {detail}.",),
        ask_now=("Where is {who} actually travelling, now that the holiday changed?",),
        echo=("{place}!! Bring me back something.",),
        decoy=("A colleague came back from {place} with a terrible sunburn.",),
    ),
    Topic(
        "book",
        (
            _v(title="a thick biography of Ada Lovelace"),
            _v(title="a Norwegian crime novel set in Bergen"),
            _v(title="a history of the spice trade"),
            _v(title="a collection of Japanese ghost stories"),
        ),
        (
            "I can't put down {title}; I read until 2 am again.",
            "Currently halfway through {title}, and the library copy is overdue already.",
        ),
        ("What book has {who} been hooked on?", "What has {who} been reading until 2 am?"),
        update=("Finished {old_title} at last. Started {title} and it's even better.",),
        ask_now=("What is {who} reading at the moment?",),
        echo=("Is {title} any good? I keep seeing it around.",),
        decoy=("Our book club picked something dreadful this month, I won't finish it.",),
    ),
    Topic(
        "vehicle",
        (
            _v(car="second-hand electric hatchback", colour="dark green"),
            _v(car="seven-seat van", colour="silver"),
            _v(car="vintage scooter", colour="mint"),
            _v(car="cargo bike", colour="orange"),
        ),
        ("Finally replaced the old banger: we bought a {colour} {car}.",),
        ("What did {who} get to replace the old car?", "What kind of vehicle did {who} buy?"),
        when=("When did {who} buy new wheels?",),
        echo=("{colour}? Bold choice.",),
        decoy=("Someone scratched my door in the supermarket car park, I'm furious.",),
    ),
    Topic(
        "allergy",
        (
            _v(thing="shellfish", effect="my throat swells up"),
            _v(thing="peanuts", effect="it's an ambulance job"),
            _v(thing="sesame", effect="I come out in hives"),
            _v(thing="kiwi fruit", effect="my mouth goes numb"),
        ),
        ("Just so you know for Saturday: I can't eat {thing}, {effect}.",),
        ("What food is {who} allergic to?", "What can't {who} eat?"),
        echo=("Noted, no {thing}!",),
        decoy=("The restaurant on the corner does an amazing {thing} dish.",),
    ),
    Topic(
        "course",
        (
            _v(course="evening course in landscape architecture", school="the polytechnic"),
            _v(course="part-time master's in public health", school="the open university"),
            _v(course="welding certificate", school="the trade college"),
            _v(course="sign language course", school="the deaf association"),
        ),
        ("I enrolled in a {course} at {school}. First class was exhausting.",),
        ("What is {who} studying?", "Which course did {who} enrol in?"),
        when=("When did {who} go back to studying?",),
        update=("I switched out of the {old_course}; now I'm doing a {course} at {school}.",),
        ask_now=("What is {who} studying now?",),
        echo=("A {course}, wow, where do you find the time?",),
        decoy=("My niece wants to apply to {school} next year.",),
    ),
    Topic(
        "renovation",
        (
            _v(room="kitchen", work="knocking through the wall to the dining room"),
            _v(room="bathroom", work="putting in a walk-in shower"),
            _v(room="attic", work="turning it into a home office"),
            _v(room="garden shed", work="insulating it to use as a studio"),
        ),
        ("The builders arrive Monday for the {room}: we're {work}.",),
        ("What part of the house is {who} having redone?", "What are the builders doing at {who}'s house?"),
        when=("When did the builders start at {who}'s house?",),
        echo=("Good luck with the dust!",),
        decoy=("Our landlord still hasn't fixed the leaking {room} tap.",),
    ),
    Topic(
        "volunteer",
        (
            _v(org="the food bank", task="sorting donations on Sunday mornings"),
            _v(org="a wildlife hospital", task="feeding orphaned hedgehogs"),
            _v(org="the refugee welcome centre", task="running conversation classes"),
            _v(org="a hospice charity shop", task="working the till on Saturdays"),
        ),
        ("I've been helping out at {org}, mostly {task}. Best part of my week.",),
        ("Where has {who} been helping out?", "What unpaid charity work does {who} do?"),
        when=("When did {who} start giving time to a good cause?",),
        echo=("That's lovely. Do they need more people?",),
        decoy=("{org} sent another letter asking for money.",),
    ),
    Topic(
        "restaurant",
        (
            _v(place="a tiny Georgian place behind the station", dish="cheese bread"),
            _v(place="the Sri Lankan canteen on Mill Road", dish="egg hoppers"),
            _v(place="a ramen bar with eight stools", dish="black garlic broth"),
            _v(place="the Lebanese bakery by the market", dish="za'atar flatbread"),
        ),
        ("New obsession: {place}. Their {dish} is unreal.",),
        ("Which restaurant is {who} raving about?", "What is {who}'s new food obsession?"),
        update=("{old_place} closed, sadly. My new go-to is {place}; get the {dish}.",),
        ask_now=("What's {who}'s favourite spot for dinner these days?",),
        echo=("Save me some {dish}.",),
        decoy=("We tried to get a table at {place} but it was full.",),
    ),
    Topic(
        "injury",
        (
            _v(injury="sprained my ankle", how="on the climbing wall"),
            _v(injury="broke my wrist", how="falling off my bike"),
            _v(injury="tore a calf muscle", how="at five-a-side football"),
            _v(injury="threw my back out", how="lifting the sofa"),
        ),
        ("Bad week: I {injury} {how}. On the sofa with ice for a while.",),
        ("What made it a bad week for {who}?", "What injury did {who} pick up?"),
        when=("When was {who} injured?",),
        echo=("Ouch. Rest up properly this time.",),
        decoy=("The physio near the park is supposed to be good, my dad swears by her.",),
    ),
    Topic(
        "school",
        (
            _v(child="our eldest", school="the bilingual primary on Castle Street"),
            _v(child="the little one", school="the forest nursery outside town"),
            _v(child="our son", school="the music school by the cathedral"),
            _v(child="our daughter", school="the sixth-form college on the ring road"),
        ),
        ("Letter came today: {child} got a place at {school}!",),
        ("Which school did {who}'s kid get into?", "Where did {who}'s child get a place?"),
        when=("When did {who} hear about the school place?",),
        echo=("Amazing news, tell {child} well done from me.",),
        decoy=("The traffic outside {school} at half eight is chaos.",),
    ),
    Topic(
        "garden",
        (
            _v(crop="tomatoes", count="nine varieties"),
            _v(crop="chillies", count="a dozen kinds"),
            _v(crop="pumpkins", count="six plants"),
            _v(crop="strawberries", count="three long rows"),
        ),
        ("The allotment is finally ours; I've put in {count} of {crop}.",),
        ("What did {who} put in at the allotment?", "What has {who} planted on the new plot of land?"),
        when=("When did {who} get the allotment?",),
        echo=("I expect a share of the {crop}.",),
        decoy=("Slugs ate everything on my balcony again.",),
    ),
    Topic(
        "language",
        (
            _v(language="Portuguese", method="an app and a tandem partner"),
            _v(language="Korean", method="evening classes"),
            _v(language="Finnish", method="a textbook and podcasts"),
            _v(language="Arabic", method="lessons online"),
        ),
        ("Trying to learn {language} with {method}. Today I ordered coffee without switching to English!",),
        ("What foreign language is {who} picking up?", "What is {who} trying to learn?"),
        when=("When did {who} start learning a new language?",),
        update=("I've put {old_language} on hold; my company is paying for {language} lessons, so that's the focus.",),
        ask_now=("Which language is {who} focused on now?",),
        echo=("Say something in {language}!",),
        decoy=("My grandmother spoke {language} and I only remember the swear words.",),
    ),
    Topic(
        "show",
        (
            _v(act="a jazz trio in a church crypt"),
            _v(act="an open-air opera"),
            _v(act="a folk festival on an island"),
            _v(act="a stand-up comedy night"),
        ),
        ("Last night we went to {act}; best evening in months.",),
        ("What live performance did {who} go to?", "Where did {who} go last night?"),
        when=("When did {who} go to the show?",),
        echo=("Jealous! I've wanted to go to {act} forever.",),
        decoy=("Tickets for {act} were sold out by the time I looked.",),
    ),
    Topic(
        "engagement",
        (
            _v(partner="Alex", place="on the night ferry to the islands"),
            _v(partner="Sam", place="at the top of the lighthouse"),
            _v(partner="Robin", place="in the middle of a thunderstorm"),
            _v(partner="Kit", place="at the café where we first met"),
        ),
        ("{partner} proposed {place}! I said yes, obviously.",),
        ("Who proposed to {who}?", "How did {who}'s partner pop the question?"),
        when=("When did {who} get engaged?",),
        echo=("Congratulations to you and {partner}!!",),
        decoy=("Wedding season again, I have four invitations and one suit.",),
    ),
    Topic(
        "series",
        (
            _v(series="a Danish political drama"),
            _v(series="a documentary series about deep-sea creatures"),
            _v(series="an old sitcom about a seaside hotel"),
            _v(series="a Korean zombie thriller"),
        ),
        ("We're bingeing {series}, three episodes a night.",),
        ("What is {who} watching on TV?", "What has {who} been bingeing?"),
        update=("We dropped {old_series} halfway. Now it's {series} every night.",),
        ask_now=("What show is {who} watching these days?",),
        echo=("No spoilers about {series}, please!",),
        decoy=("Everyone at work keeps spoiling {series} for me.",),
    ),
    Topic(
        "craft",
        (
            _v(craft="pottery", detail="a wheel-throwing class"),
            _v(craft="woodturning", detail="a lathe course at the makerspace"),
            _v(craft="bookbinding", detail="a weekend bookbinding workshop"),
            _v(craft="stained glass", detail="a glass-cutting class"),
        ),
        ("Started {detail}. My first piece is hideous and I'm very proud of it.",),
        ("What hands-on hobby has {who} taken up?", "What class did {who} start?"),
        when=("When did {who} start the new craft?",),
        echo=("Make me one!",),
        decoy=("My aunt sells {craft} at the Sunday market.",),
    ),
    Topic(
        "birthday",
        (
            _v(age="40th", plan="renting a cabin by the lake for the weekend"),
            _v(age="30th", plan="hiring a karaoke room for the night"),
            _v(age="50th", plan="a long lunch on a river boat"),
            _v(age="35th", plan="a picnic and rounders in the park"),
        ),
        ("For my {age} I'm doing {plan}. You're all invited, obviously.",),
        ("How is {who} celebrating the big birthday?", "What is {who} doing for the {age}?"),
        when=("When did {who} invite everyone to the birthday party?",),
        echo=("Count me in for the {age}!",),
        decoy=("I forgot my own mother's birthday. Again.",),
    ),
)

# Multi-hop chains: a relative introduced by relation and name, then a fact about the name alone.
# Gender-neutral, since the names are drawn independently of the relation.
RELATIONS = (
    "cousin",
    "flatmate",
    "oldest friend",
    "twin",
    "godchild",
    "next-door neighbour",
    "business partner",
    "old teammate",
)
INTRODUCE = (
    "My {rel} {rname} is coming to stay for a bit; we haven't seen each other in ages.",
    "Had lunch with my {rel} {rname} today, still the funniest person I know.",
    "You've never met my {rel}, have you? {rname}. You'd get on.",
)
CHAIN_FACTS = (
    (
        "{rname} just got taken on as a {job} at the {workplace}.",
        "What does {who}'s {rel} do for work?",
        (
            _v(job="lighthouse keeper", workplace="harbour authority"),
            _v(job="sound engineer", workplace="opera house"),
            _v(job="beekeeper", workplace="botanical garden"),
            _v(job="tram driver", workplace="city transport company"),
        ),
    ),
    (
        "{rname} has moved up to {city} for good, can you believe it.",
        "Where does {who}'s {rel} live now?",
        (_v(city="Inverness"), _v(city="Bergen"), _v(city="Porto"), _v(city="Quebec City"), _v(city="Hobart")),
    ),
    (
        "{rname} won a medal at the regional {sport} championships!",
        "What sport does {who}'s {rel} compete in?",
        (_v(sport="fencing"), _v(sport="rowing"), _v(sport="judo"), _v(sport="archery")),
    ),
    (
        "{rname} has a {pet} that {trick}.",
        "What kind of pet does {who}'s {rel} keep?",
        (
            _v(pet="parrot", trick="swears in two languages"),
            _v(pet="tortoise", trick="is older than all of us"),
            _v(pet="ferret", trick="steals socks"),
        ),
    ),
    (
        "{rname} is out of hospital; the {operation} went fine.",
        "What operation did {who}'s {rel} have?",
        (_v(operation="hip replacement"), _v(operation="knee surgery"), _v(operation="heart bypass")),
    ),
)

# Questions about two facts of one person at once (both turns expected).
PAIR_QUESTIONS = (
    "{who} shared two pieces of news, about {a} and about {b}: what were they?",
    "Tell me both things {who} mentioned regarding {a} and {b}.",
)
TOPIC_GLOSS = {
    "pet": "an animal", "job": "work", "move": "a move", "instrument": "music", "race": "a race",
    "trip": "a holiday", "book": "reading", "vehicle": "a vehicle", "allergy": "food", "course": "studying",
    "renovation": "the house", "volunteer": "charity", "restaurant": "eating out", "injury": "an injury",
    "school": "a school", "garden": "gardening", "language": "a language", "show": "a night out",
    "engagement": "a proposal", "series": "TV", "craft": "a craft", "birthday": "a birthday",
}  # fmt: skip

FILLER = (
    "Morning {other}! How was the weekend?",
    "Ha, same here.",
    "Sorry for the slow reply {other}, the day got away from me.",
    "Did you ever call the plumber back?",
    "That's wild.",
    "Talk tomorrow?",
    "The weather has been miserable all week.",
    "lol",
    "Give my love to everyone, {other}.",
    "I'll tell you properly when we meet up.",
    "Oh no, what happened?",
    "Honestly same.",
    "Are we still on for Friday?",
    "I owe you a coffee, {other}.",
    "Can't talk long, on the train.",
    "How's your mum doing, {other}?",
    "Did anyone see the match last night?",
    "I need a holiday from my holiday.",
    "Haha {other} you're impossible.",
    "What are you all up to this weekend?",
    "My phone died halfway through the day, sorry.",
    "That reminds me, I still have your umbrella.",
)
# Neutral reactions: the news before them can be good or bad.
REPLIES = ("No way, tell me more.", "Wait, since when?", "Oh wow.", "Really?!", "Hold on, I need details.")
GREETINGS = ("Hi all!", "Hey {other}, long time.", "Evening, everyone.", "Right, catching up on this chat now.")
CLOSINGS = ("Night all.", "Off to bed, speak soon.", "Got to run, bye {other}!", "Later!")


@dataclass
class Turn:
    speaker: str
    text: str
    session: int = 0
    memory_id: str = ""


@dataclass
class Fact:
    topic: Topic
    owner: str
    values: dict[str, str]
    said: Turn
    newer: dict[str, str] | None = None
    update: Turn | None = None
    echoes: list[Turn] = field(default_factory=list)


def _fill(template: str, **slots: str) -> str:
    return template.format(**slots)


def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


class Conversation:
    """One chat: who takes part, what each says in which session, and the questions asked about it."""

    def __init__(self, index: int, rng: random.Random) -> None:
        self.name = f"c{index:02d}"
        self.scope = f"chat:{self.name}"
        self.rng = rng
        self.people = rng.sample(PEOPLE, rng.choice((2, 2, 3, 3, 4)))
        self.session_count = rng.randint(*SESSIONS)
        start = datetime.date(2023, 1, 2) + datetime.timedelta(days=rng.randint(0, 540))
        self.dates: list[datetime.date] = []
        day = start
        for _ in range(self.session_count):
            self.dates.append(day)
            day += datetime.timedelta(days=rng.randint(3, 38))
        # Turns placed per session, before filler is woven in; each list keeps its order.
        self.planned: list[list[Turn]] = [[] for _ in range(self.session_count)]
        self.queries: list[dict[str, object]] = []

    def other(self, speaker: str) -> str:
        return self.rng.choice([p for p in self.people if p != speaker])

    def place(self, turns: Sequence[Turn], session: int) -> None:
        for turn in turns:
            turn.session = session
            self.planned[session].append(turn)

    def build(self) -> list[Turn]:
        rng = self.rng
        topics = rng.sample(TOPICS, FACTS_PER_CONVERSATION)
        updatable = [t for t in topics if t.update]
        updated = {t.key for t in rng.sample(updatable, min(UPDATES_PER_CONVERSATION, len(updatable)))}
        facts: list[Fact] = []
        last_session = self.session_count - 1
        for i, topic in enumerate(topics):
            owner = self.people[i % len(self.people)]
            first, second = rng.sample(range(len(topic.values)), 2)
            values = topic.values[first]
            said = Turn(owner, _fill(rng.choice(topic.say), **values))
            fact = Fact(topic, owner, values, said)
            session = rng.randint(0, last_session - 2 if topic.key in updated else last_session)
            self.place([said, *self._reactions(fact)], session)
            if topic.key in updated:
                fact.newer = topic.values[second]
                old = {f"old_{k}": v for k, v in values.items()}
                fact.update = Turn(owner, _first_upper(_fill(rng.choice(topic.update), **fact.newer, **old)))
                self.place([fact.update], rng.randint(session + 1, last_session))
            for _ in range(rng.randint(1, 2)):
                slots = values if rng.random() < 0.5 else topic.values[rng.randrange(len(topic.values))]
                decoy = Turn(rng.choice(self.people), _first_upper(_fill(rng.choice(topic.decoy), **slots)))
                self.place([decoy], rng.randint(0, last_session))
            facts.append(fact)
        self._ask_facts(facts)
        self._chains(topics)
        self._abstain(topics, facts)
        return self._weave()

    def _reactions(self, fact: Fact) -> list[Turn]:
        rng = self.rng
        reactions = [Turn(self.other(fact.owner), rng.choice(REPLIES))]
        if fact.topic.echo and rng.random() < 0.7:
            echo = Turn(self.other(fact.owner), _first_upper(_fill(rng.choice(fact.topic.echo), **fact.values)))
            fact.echoes.append(echo)
            reactions.append(echo)
        return reactions

    def _query(self, category: str, text: str, expected: list[Turn], outdated: Sequence[Turn] = ()) -> None:
        self.queries.append(
            {"category": category, "query": text, "expected": expected, "outdated": list(outdated)},
        )

    def _ask_facts(self, facts: list[Fact]) -> None:
        rng = self.rng
        plain = [f for f in facts if f.update is None]
        for fact in plain:
            self._query("single-hop", _fill(rng.choice(fact.topic.ask), who=fact.owner, **fact.values), [fact.said])
        timed = [f for f in plain if f.topic.when]
        for fact in rng.sample(timed, min(WHEN_QUESTIONS, len(timed))):
            self._query("temporal", _fill(rng.choice(fact.topic.when), who=fact.owner), [fact.said])
        for fact in facts:
            if fact.update is not None:
                question = _fill(rng.choice(fact.topic.ask_now), who=fact.owner)
                self._query("temporal", question, [fact.update], [fact.said])
        by_owner: dict[str, list[Fact]] = {}
        for fact in plain:
            by_owner.setdefault(fact.owner, []).append(fact)
        owners = [o for o in self.people if len(by_owner.get(o, [])) >= 2]
        for owner in rng.sample(owners, min(PAIRS_PER_CONVERSATION, len(owners))):
            a, b = rng.sample(by_owner[owner], 2)
            text = _fill(rng.choice(PAIR_QUESTIONS), who=owner, a=TOPIC_GLOSS[a.topic.key], b=TOPIC_GLOSS[b.topic.key])
            self._query("multi-hop", text, [a.said, b.said])

    def _chains(self, topics: Sequence[Topic]) -> None:
        rng = self.rng
        names = rng.sample(RELATIVES, CHAINS_PER_CONVERSATION)
        relations = rng.sample(RELATIONS, CHAINS_PER_CONVERSATION)
        kinds = rng.sample(CHAIN_FACTS, CHAINS_PER_CONVERSATION)
        for i, (rname, rel, (statement, question, values)) in enumerate(zip(names, relations, kinds, strict=True)):
            owner = self.people[(i + 1) % len(self.people)]
            intro = Turn(owner, _fill(rng.choice(INTRODUCE), rel=rel, rname=rname))
            detail = Turn(owner, _fill(statement, rname=rname, **rng.choice(values)))
            first = rng.randint(0, self.session_count - 3)
            self.place([intro, Turn(self.other(owner), f"Say hi to {rname} from me!")], first)
            self.place([detail], rng.randint(first + 1, self.session_count - 1))
            self._query("multi-hop", _fill(question, who=owner, rel=rel), [intro, detail])

    def _abstain(self, topics: Sequence[Topic], facts: list[Fact]) -> None:
        """Questions about a person and a topic that person never spoke about; mostly topics others raised."""
        rng = self.rng
        told = {(f.owner, f.topic.key) for f in facts}
        spoken = [(p, t) for t in topics for p in self.people if (p, t.key) not in told]
        unspoken = [(p, t) for t in TOPICS if t not in topics for p in self.people]
        picks = rng.sample(spoken, min(ABSTAIN_PER_CONVERSATION - 1, len(spoken))) + rng.sample(unspoken, 1)
        for person, topic in picks:
            values = rng.choice(topic.values)
            self._query("abstain", _fill(rng.choice(topic.ask), who=person, **values), [])

    def _weave(self) -> list[Turn]:
        """Each session: a greeting, the planned turns in order with filler between, a closing."""
        rng = self.rng
        turns: list[Turn] = []
        for session, planned in enumerate(self.planned):
            speaker = rng.choice(self.people)
            body = [Turn(speaker, _fill(rng.choice(GREETINGS), other=self.other(speaker)))]
            for turn in planned:
                for _ in range(rng.randint(0, 2)):
                    who = rng.choice(self.people)
                    body.append(Turn(who, _fill(rng.choice(FILLER), other=self.other(who))))
                body.append(turn)
            speaker = rng.choice(self.people)
            body.append(Turn(speaker, _fill(rng.choice(CLOSINGS), other=self.other(speaker))))
            for number, turn in enumerate(body, start=1):
                turn.session = session
                turn.memory_id = f"{self.name}-s{session + 1:02d}-t{number:02d}"
            turns.extend(body)
        return turns


def generate(seed: int = SEED) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The suite's memories and queries, as the JSON objects written one a line."""
    rng = random.Random(seed)
    memories: list[dict[str, object]] = []
    queries: list[dict[str, object]] = []
    for index in range(1, CONVERSATIONS + 1):
        conversation = Conversation(index, random.Random(rng.getrandbits(64)))
        for turn in conversation.build():
            memories.append(
                {
                    "id": turn.memory_id,
                    "scope_id": conversation.scope,
                    "kind": "note",
                    "created": conversation.dates[turn.session].isoformat(),
                    "text": f"{turn.speaker}: {turn.text}",
                }
            )
        for number, query in enumerate(conversation.queries, start=1):
            expected = query["expected"]
            outdated = query["outdated"]
            assert isinstance(expected, list) and isinstance(outdated, list)
            queries.append(
                {
                    "id": f"{conversation.name}-q{number:03d}",
                    "scope_id": conversation.scope,
                    "query": query["query"],
                    "category": query["category"],
                    "expected": [t.memory_id for t in expected],
                    "outdated": [t.memory_id for t in outdated],
                }
            )
    return memories, queries


def render(rows: Sequence[dict[str, object]]) -> bytes:
    """JSON Lines, UTF-8, keys in insertion order: the exact bytes committed."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def write(out: Path, seed: int = SEED) -> None:
    memories, queries = generate(seed)
    out.mkdir(parents=True, exist_ok=True)
    (out / "memories.jsonl").write_bytes(render(memories))
    (out / "queries.jsonl").write_bytes(render(queries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="suite directory (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    write(args.out, args.seed)


if __name__ == "__main__":
    main()
